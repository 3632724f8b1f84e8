//! matmul：两个 n×n 的 f32 随机矩阵，先同步；第一次 matmul 计时到同步完成，再跑 20 次。

use crate::device::Dev;
use bookrec::measure;
use bookrec::modes::matmul;
use candle_core::{Result, Tensor};
use std::time::Instant;

pub fn run(dev: &Dev, n: usize) -> Result<()> {
    if let Some(init) = dev.init {
        matmul::device_init(&dev.run(), &format!("new_{}", dev.name), init);
    }
    // ANCHOR: matmul_timing
    let a = Tensor::rand(-1f32, 1f32, (n, n), &dev.device)?;
    let b = Tensor::rand(-1f32, 1f32, (n, n), &dev.device)?;
    dev.sync()?;
    let t = Instant::now();
    let c = a.matmul(&b)?;
    dev.sync()?;
    let first = t.elapsed();
    // 之后每次都同步，c 活到同步之后
    let later = measure(0, 20, || {
        let c = a.matmul(&b).unwrap();
        dev.sync().unwrap();
        drop(c);
    });
    // ANCHOR_END: matmul_timing
    drop(c);
    matmul::report(&dev.run(), n, first, &later);
    Ok(())
}
