//! design-bench：「设计取舍」一页的 candle 一侧。
//!
//! 用法：design-bench <模式> <设备> [参数...]
//!   设备：cpu、cuda（要 `--features cuda`）、metal（只在 macOS）
//!   模式：matmul [n=1024] | mlp | phases | chains [n=4096] [rounds=7] | smallop [iters=1000000]
//!         | errors | views [iters=1000000] | deadlock | varset
//!         | firstuse（启动自己两次：firstuse-process <设备> <1|2>）
//! 和 design-burn 逐模式对应：同一个负载，同样的结构和名字。

mod chains;

mod device;
mod errors;
mod firstuse;
mod matmul;
mod mlp;
mod smallop;
mod storage;

use device::{fail, Dev};

const USAGE: &str = "usage: design-bench <matmul|mlp|phases|chains|smallop|errors|views|deadlock|varset|firstuse> <cpu|cuda|metal> [args...]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(name)) = (args.first(), args.get(1)) else {
        fail(USAGE)
    };
    if mode == "firstuse" {
        // 父进程不打开设备，只启动两个子进程
        if let Err(e) = firstuse::run(name) {
            fail(&format!("firstuse: {e}"));
        }
        return;
    }
    let dev = Dev::open(name);
    let num = |i: usize, default: usize| match args.get(2 + i) {
        None => default,
        Some(s) => s
            .parse()
            .unwrap_or_else(|_| fail(&format!("not a number: {s}"))),
    };
    let result = match mode.as_str() {
        "matmul" => matmul::run(&dev, num(0, 1024)),
        "mlp" => mlp::run(&dev),
        "phases" => mlp::run_phases(&dev),
        "chains" => chains::run(&dev, num(0, 4096), num(1, 7)),
        "smallop" => smallop::run(&dev, num(0, 1_000_000)),
        "errors" => errors::run(&dev),
        "views" => storage::run_views(&dev, num(0, 1_000_000)),
        "deadlock" => storage::run_deadlock(&dev),
        "varset" => storage::run_varset(&dev),
        "firstuse-process" => firstuse::run_process(&dev, args.get(2).map_or("1", |s| s.as_str())),
        other => fail(&format!("unknown mode `{other}`\n{USAGE}")),
    };
    if let Err(e) = result {
        eprintln!("design-bench {mode}: {e}");
        std::process::exit(1);
    }
}
