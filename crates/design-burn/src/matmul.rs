//! matmul：两个 n×n 的 f32 随机矩阵，先同步；第一次 matmul 计时到同步完成，再跑 20 次。

use crate::device::Dev;
use bookrec::{fmt_duration, measure, record, record_duration, record_stats};
use burn::prelude::*;
use burn::tensor::Distribution;
use std::time::Instant;

pub fn run(dev: &Dev, n: usize) {
    if let Some(init) = dev.init {
        println!(
            "burn {} device init + first op: {}",
            dev.name,
            fmt_duration(init)
        );
        record_duration("matmul.device_init", init, &dev.tags(&[]));
    }
    // ANCHOR: matmul_timing
    let a = Tensor::<2>::random([n, n], Distribution::Uniform(-1.0, 1.0), &dev.device);
    let b = Tensor::<2>::random([n, n], Distribution::Uniform(-1.0, 1.0), &dev.device);
    dev.sync();
    let t = Instant::now();
    let c = a.clone().matmul(b.clone());
    dev.sync();
    let first = t.elapsed();
    // 之后每次都同步，c 活到同步之后
    let later = measure(0, 20, || {
        let c = a.clone().matmul(b.clone());
        dev.sync();
        drop(c);
    });
    // ANCHOR_END: matmul_timing
    drop(c);
    let gflops = 2.0 * (n as f64).powi(3) / later.median.as_secs_f64() / 1e9;
    println!(
        "burn {} {n}x{n} f32: first {}  later min {} median {} ({gflops:.0} GFLOP/s)",
        dev.label(),
        fmt_duration(first),
        fmt_duration(later.min),
        fmt_duration(later.median),
    );
    let size = n.to_string();
    let tags = dev.tags(&[("size", &size)]);
    record("matmul.path", dev.label(), "", &tags);
    record_duration("matmul.first", first, &tags);
    record_stats("matmul.later", &later, &tags);
    record("matmul.gflops", gflops, "GFLOP/s", &tags);
}
