//! matmul：两个 n×n 的 f32 随机矩阵，先同步；第一次 matmul 计时到同步完成，再跑 20 次。

use crate::device::Dev;
use bookrec::measure;
use bookrec::modes::matmul;
use burn::prelude::*;
use burn::tensor::Distribution;
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
}
