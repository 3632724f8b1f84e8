//! design-burn：「设计取舍」一页的 burn 一侧。
//!
//! 用法：design-burn <模式> <设备> [参数...]
//!   设备：flex、cuda（要 `--features cuda`）、metal（只在 macOS）
//!   模式：matmul [n=1024] | mlp | chains [n=4096] [rounds=7] | smallop [iters=1000000] | shape
//! 和 design-bench 逐模式对应：同一个负载，同样的结构和名字。

mod chains;

mod device;
mod matmul;
mod mlp;
mod shape;
mod smallop;

use device::{fail, Dev};

const USAGE: &str =
    "usage: design-burn <matmul|mlp|chains|smallop|shape> <flex|cuda|metal> [args...]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(name)) = (args.first(), args.get(1)) else {
        fail(USAGE)
    };
    let dev = Dev::open(name);
    let num = |i: usize, default: usize| match args.get(2 + i) {
        None => default,
        Some(s) => s
            .parse()
            .unwrap_or_else(|_| fail(&format!("not a number: {s}"))),
    };
    match mode.as_str() {
        "matmul" => matmul::run(&dev, num(0, 1024)),
        "mlp" => mlp::run(&dev),
        "chains" => chains::run(&dev, num(0, 4096), num(1, 7)),
        "smallop" => smallop::run(&dev, num(0, 1_000_000)),
        "shape" => shape::run(&dev),
        other => fail(&format!("unknown mode `{other}`\n{USAGE}")),
    }
}
