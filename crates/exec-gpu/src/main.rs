//! eager 和延迟执行：burn 一侧的实验。
//!
//! ```text
//! exec-gpu dispatch DEVICE...        the layer chain of each device (Dispatch::name)
//! exec-gpu MODE DEVICE [N] [REPS]    MODE: ret drop chain8 chaindims accuracy shape huge oob
//! ```
//!
//! DEVICE: `flex`, `cuda` (feature `cuda`), `vulkan` (feature `vulkan`) or `metal` (on by
//! default on macOS; feature `metal` elsewhere, for type-checking). N is the side of the
//! square f32 tensors (default 4096); REPS the evaluations per round in `drop` (default 20).
//! Every number a page may cite is also written as a record (see the `bookrec` crate).
//! Usage errors exit with status 2 (`bookrec::cli`).

mod chain;
mod device;
mod errors;
mod lazy;

use bookrec::cli::Program;
use bookrec::record;
use burn::backend::{Backend, Dispatch};

use crate::device::{device, tags};

pub static PROGRAM: Program = Program::new(
    "exec-gpu",
    "usage: exec-gpu dispatch DEVICE... | exec-gpu MODE DEVICE [N] [REPS]\n\
     MODE: ret drop chain8 chaindims accuracy shape huge oob; DEVICE: flex cuda vulkan metal",
);

fn main() {
    let args = PROGRAM.args();
    let (mode, dev) = (args.mode.as_str(), args.device.as_str());
    if mode == "dispatch" {
        for d in std::iter::once(dev).chain(args.rest().iter().map(String::as_str)) {
            dispatch(d);
        }
        return;
    }
    let (n, reps) = (PROGRAM.num(&args, 0, 4096), PROGRAM.num(&args, 1, 20));
    let device = device(dev);
    match mode {
        "ret" => lazy::ret(dev, &device, n),
        "drop" => lazy::drop_results(dev, &device, n, reps as u32),
        "chain8" => chain::chain8_mode(dev, &device, n),
        "chaindims" => chain::chaindims(dev, &device, n),
        "accuracy" => chain::accuracy(dev, &device),
        "shape" => errors::shape(dev, &device),
        "huge" => errors::huge(dev, &device),
        "huge-child" => errors::huge_child(&device),
        "oob" => errors::oob(dev, &device),
        other => PROGRAM.unknown_mode(other),
    }
}

fn dispatch(d: &str) {
    // ANCHOR: dispatch
    let dev = device(d);
    println!("{d}: {}", Dispatch::name(dev.as_dispatch()));
    // ANCHOR_END: dispatch
    record(
        "dispatch.name",
        Dispatch::name(dev.as_dispatch()),
        "",
        &tags(d),
    );
}
