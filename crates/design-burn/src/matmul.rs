//! matmul：两个 n×n 的 f32 随机矩阵，先同步；第一次 matmul 计时到同步完成，再跑 20 次。

use crate::device::Dev;
use bookrec::modes::matmul;
use bookrec::{fmt_duration, measure, record_stats, Stats};
use burn::prelude::*;
use burn::tensor::{read_sync, Distribution, ProfileOptions, TimingMethod};
use std::time::Instant;

pub fn run(dev: &Dev, n: usize) {
    if let Some(init) = dev.init {
        let what = format!("{} device init + first op", dev.name);
        matmul::device_init(&dev.run(), &what, init);
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
    matmul::report(&dev.run(), n, first, &later);
    if dev.init.is_some() {
        let (s, method) = device_time(dev, &a, &b);
        println!(
            "burn {} {n}x{n} f32: device time min {} median {} (profile_with, {method:?})",
            dev.label(),
            fmt_duration(s.min),
            fmt_duration(s.median)
        );
        let tags = dev.run().tags().with("size", n);
        record_stats("matmul.device", &s, &tags.with("timing", method));
    }
}

/// GPU 上矩阵乘本身在设备上花的时间：先跑一次（不记），再量 20 次。
fn device_time(dev: &Dev, a: &Tensor<2>, b: &Tensor<2>) -> (Stats, TimingMethod) {
    let mut samples = Vec::new();
    let mut method = TimingMethod::System;
    for run in 0..21 {
        // ANCHOR: matmul_device
        let (a, b) = (a.clone(), b.clone());
        let options = ProfileOptions::default().flush(); // 窗口关上前先执行排队的 op
        let (c, window) = dev
            .device
            .profile_with(options, move || a.matmul(b))
            .unwrap();
        method = window.timing_method(); // Device：设备时钟
        let ticks = read_sync(window.resolve()).expect("窗口里执行过工作");
        // ANCHOR_END: matmul_device
        drop(c);
        if run > 0 {
            samples.push(ticks.duration());
        }
    }
    (Stats::from_samples(&samples), method)
}
