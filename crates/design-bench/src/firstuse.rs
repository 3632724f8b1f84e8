//! firstuse：新进程里每类内核第一次用到的代价，连跑两个进程。
//!
//! candle 的 CUDA 内核在构建时编成 PTX 嵌进二进制；进程里第一次用到某个内核模块
//! （fill、affine、unary……每个 .cu 文件一个模块）时才装载，由驱动把 PTX 编成这块 GPU 的机器码。
//! 驱动把编好的结果缓存在磁盘上（`CUDA_CACHE_PATH`）。所以本模式启动自己两次：
//! 两个子进程共用一个新建的空缓存目录，第一个进程付编译的钱，第二个进程读缓存。
//! Metal 上同样跑两个进程（`.metal` 文件在第一次用到时编译），只是没有可以指定的缓存目录。

use crate::device::Dev;
use crate::mlp;
use crate::PROGRAM;
use bookrec::{fmt_duration, record, record_duration, Tags};
use candle_core::{DType, Result, Tensor};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const N: usize = 1 << 20;

/// 父进程：建一个空的缓存目录，先后启动两个子进程，报告第一个进程之后缓存有多大。
pub fn run(device: &str) -> Result<()> {
    let cache =
        std::env::temp_dir().join(format!("design-bench-cuda-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache)?;
    let exe = std::env::current_exe()?;
    for process in ["1", "2"] {
        let mut cmd = Command::new(&exe);
        cmd.args(["firstuse-process", device, process]);
        if device == "cuda" {
            cmd.env("CUDA_CACHE_PATH", &cache)
                .env_remove("CUDA_CACHE_DISABLE");
        }
        let status = cmd.status()?;
        if !status.success() {
            PROGRAM.fail(&format!("firstuse: process {process} failed: {status}"));
        }
        if process == "1" && device == "cuda" {
            let bytes = dir_size(&cache);
            println!("driver cache after process 1: {:.1} MB", bytes as f64 / 1e6);
            let tags = Tags::new()
                .with("framework", "candle")
                .with("device", device);
            record("firstuse.cache_bytes", bytes as f64, "B", &tags);
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    Ok(())
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// 子进程：每类内核各用两次，都同步到设备做完；最后是 MLP 的前两个训练步。
pub fn run_process(dev: &Dev, process: &str) -> Result<()> {
    if let Some(init) = dev.init {
        println!("process {process}: new_{} {}", dev.name, fmt_duration(init));
    }
    let xs: Vec<f32> = (0..N).map(|i| (i % 97) as f32 / 97.0).collect();
    let x = Tensor::from_vec(xs, N, &dev.device)?;
    let ids = Tensor::from_vec((0..1024u32).collect::<Vec<_>>(), 1024, &dev.device)?;
    let a = x.narrow(0, 0, 256 * 256)?.reshape((256, 256))?;
    dev.sync()?;
    // ANCHOR: firstuse
    // 每一项用到一个内核模块（矩阵乘交给 cuBLAS）；每次都同步，结果活到同步之后
    let ops: [(&str, &dyn Fn() -> Result<Tensor>); 8] = [
        ("fill", &|| Tensor::ones(N, DType::F32, &dev.device)),
        ("affine", &|| x.affine(2.0, 1.0)),
        ("unary", &|| x.exp()),
        ("binary", &|| &x + &x),
        ("reduce", &|| x.sum_all()),
        ("cast", &|| x.to_dtype(DType::F16)),
        ("indexing", &|| x.index_select(&ids, 0)),
        ("matmul", &|| a.matmul(&a)),
    ];
    for (module, op) in ops {
        let [first, again] = [0, 1].map(|_| -> Result<Duration> {
            let t = Instant::now();
            let out = op()?;
            dev.sync()?;
            let d = t.elapsed();
            drop(out);
            Ok(d)
        });
        report(dev, process, module, first?, again?);
    }
    // ANCHOR_END: firstuse
    let [first, again] = mlp::first_steps(dev)?;
    report(dev, process, "mlp_step", first, again);
    Ok(())
}

fn report(dev: &Dev, process: &str, what: &str, first: Duration, again: Duration) {
    println!(
        "process {process}: {what:<9} first {:>9}  again {:>9}",
        fmt_duration(first),
        fmt_duration(again)
    );
    let tags = dev.tags().with("what", what).with("process", process);
    record_duration("firstuse.first", first, &tags);
    record_duration("firstuse.again", again, &tags);
}
