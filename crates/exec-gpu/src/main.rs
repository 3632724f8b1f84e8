//! eager 和延迟执行：burn 一侧的实验。
//!
//! ```text
//! exec-gpu dispatch DEVICE...        the layer chain of each device (Dispatch::name)
//! exec-gpu MODE DEVICE [N] [REPS]    MODE: ret drop chain8 chaindims accuracy shape huge oob
//! ```
//!
//! DEVICE: `flex`, `cuda` (feature `cuda`), `vulkan` (feature `vulkan`) or `metal` (macOS
//! builds). N is the side of the
//! square f32 tensors (default 4096); REPS the evaluations per round in `drop` (default 20).
//! Every number a page may cite is also written as a record (see the `bookrec` crate).

mod chain;
mod device;
mod errors;
mod lazy;

use bookrec::record;
use burn::backend::{Backend, Dispatch};

use crate::device::{device, Tags};

const USAGE: &str = "usage: exec-gpu dispatch DEVICE... | exec-gpu MODE DEVICE [N] [REPS]\n\
                     MODE: ret drop chain8 chaindims accuracy shape huge oob; DEVICE: flex cuda vulkan metal";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, dev, rest @ ..] = args.as_slice() else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    if mode == "dispatch" {
        for d in std::iter::once(dev).chain(rest) {
            dispatch(d);
        }
        return;
    }
    let num = |i: usize, default: usize| -> usize {
        rest.get(i)
            .map_or(default, |s| s.parse().unwrap_or_else(|_| bad(s)))
    };
    let (n, reps) = (num(0, 4096), num(1, 20));
    let device = device(dev);
    match mode.as_str() {
        "ret" => lazy::ret(dev, &device, n),
        "drop" => lazy::drop_results(dev, &device, n, reps as u32),
        "chain8" => chain::chain8_mode(dev, &device, n),
        "chaindims" => chain::chaindims(dev, &device, n),
        "accuracy" => chain::accuracy(dev, &device),
        "shape" => errors::shape(dev, &device),
        "huge" => errors::huge(dev, &device),
        "huge-child" => errors::huge_child(&device),
        "oob" => errors::oob(dev, &device),
        other => {
            eprintln!("unknown mode {other:?}\n{USAGE}");
            std::process::exit(2);
        }
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
        &Tags::new(d).get(),
    );
}

fn bad(s: &str) -> ! {
    eprintln!("not a number: {s:?}\n{USAGE}");
    std::process::exit(2)
}
