//! design-bench：「设计取舍」一页的 candle 一侧。
//!
//! 用法：design-bench <模式> <设备> [参数...]
//!   设备：cpu、cuda（要 `--features cuda`）、metal（只在 macOS）
//!   模式：matmul [n=1024] | mlp | phases | chains [n=4096] [rounds=7] | smallop [iters=1000000]
//!         | errors | views [iters=1000000] | deadlock | varset | silent | errcost [iters=100000] | panics
//!         | firstuse（启动自己两次：firstuse-process <设备> <1|2>）
//!         | context | softmax [heads=8] [n=512] | encode [ops=1000] | decode <fused|unfused> [layers=30] [ctx=256]
//!         | metal_twice（只在有 Metal 的构建里）| dummy_metal（只在没有 Metal 的构建里）
//! 和 design-burn 逐模式对应：同一个负载，同样的结构和名字（共有模式的报告在 bookrec::modes）。

mod chains;
mod context;
mod decode;
mod device;
mod encode;
mod errors;
mod firstuse;
mod matmul;
mod metal;
mod mlp;
mod panics;
mod silent;
mod smallop;
mod softmax;
mod storage;

use bookrec::cli::Program;
use device::Dev;

pub static PROGRAM: Program = Program::new(
    "design-bench",
    "usage: design-bench <matmul|mlp|phases|chains|smallop|errors|views|deadlock|varset|silent|errcost|panics|firstuse|context|softmax|encode|decode|metal_twice|dummy_metal> <cpu|cuda|metal> [args...]",
);

fn main() {
    let args = PROGRAM.args();
    let (mode, name) = (args.mode.as_str(), args.device.as_str());
    if mode == "firstuse" {
        // 父进程不打开设备，只启动两个子进程
        if let Err(e) = firstuse::run(name) {
            PROGRAM.fail(&format!("firstuse: {e}"));
        }
        return;
    }
    let dev = Dev::open(name);
    let num = |i: usize, default: usize| PROGRAM.num(&args, i, default);
    let result = match mode {
        "matmul" => matmul::run(&dev, num(0, 1024)),
        "mlp" => mlp::run(&dev),
        "phases" => mlp::run_phases(&dev),
        "chains" => chains::run(&dev, num(0, 4096), num(1, 7)),
        "smallop" => smallop::run(&dev, num(0, 1_000_000)),
        "errors" => errors::run(&dev),
        "views" => storage::run_views(&dev, num(0, 1_000_000)),
        "deadlock" => storage::run_deadlock(&dev),
        "varset" => storage::run_varset(&dev),
        "silent" => silent::run(&dev),
        "errcost" => panics::run_errcost(&dev, num(0, 100_000)),
        "panics" => panics::run_panics(&dev),
        "context" => context::run(&dev),
        "softmax" => softmax::run(&dev, num(0, 8), num(1, 512)),
        "encode" => encode::run(&dev, num(0, 1000)),
        "decode" => decode::run(
            &dev,
            args.rest().first().map_or("fused", |s| s.as_str()),
            num(1, 30),
            num(2, 256),
        ),
        "metal_twice" => metal::run_twice(&dev),
        "dummy_metal" => metal::run_dummy(&dev),
        "firstuse-process" => {
            firstuse::run_process(&dev, args.rest().first().map_or("1", |s| s.as_str()))
        }
        other => PROGRAM.unknown_mode(other),
    };
    if let Err(e) = result {
        PROGRAM.fail(&format!("{mode}: {e}"));
    }
}
