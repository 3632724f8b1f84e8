//! design-burn：「设计取舍」一页的 burn 一侧。
//!
//! 用法：design-burn <模式> <设备> [参数...]
//!   设备：flex、cuda（要 `--features cuda`）、vulkan（要 `--features vulkan`）、metal（macOS 上自动打开）
//!   模式：matmul [n=1024] | mlp | chains [n=4096] [rounds=7] | smallop [iters=1000000] | shape
//! 和 design-bench 逐模式对应：同一个负载，同样的结构和名字（共有模式的报告在 bookrec::modes）。

mod chains;

mod device;
mod matmul;
mod mlp;
mod shape;
mod smallop;

use bookrec::cli::Program;
use device::Dev;

pub static PROGRAM: Program = Program::new(
    "design-burn",
    "usage: design-burn <matmul|mlp|chains|smallop|shape> <flex|cuda|vulkan|metal> [args...]",
);

fn main() {
    let args = PROGRAM.args();
    let dev = Dev::open(&args.device);
    let num = |i: usize, default: usize| PROGRAM.num(&args, i, default);
    match args.mode.as_str() {
        "matmul" => matmul::run(&dev, num(0, 1024)),
        "mlp" => mlp::run(&dev),
        "chains" => chains::run(&dev, num(0, 4096), num(1, 7)),
        "smallop" => smallop::run(&dev, num(0, 1_000_000)),
        "shape" => shape::run(&dev),
        other => PROGRAM.unknown_mode(other),
    }
}
