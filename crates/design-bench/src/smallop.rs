//! smallop：16 个 f32 的加法，循环 iters 次，跑 3 轮，报告每次的时间。
//! 张量这么小，量到的几乎全是框架本身的开销：分派、检查、取锁、分配。

use crate::device::Dev;
use bookrec::modes::smallop::{report, ROUNDS};
use candle_core::{Result, Tensor};
use std::hint::black_box;
use std::time::Instant;

pub fn run(dev: &Dev, iters: usize) -> Result<()> {
    let a = Tensor::ones(16, candle_core::DType::F32, &dev.device)?;
    let b = Tensor::ones(16, candle_core::DType::F32, &dev.device)?;
    for round in 0..ROUNDS {
        // ANCHOR: smallop
        let t = Instant::now();
        for _ in 0..iters {
            black_box((&a + &b)?);
        }
        dev.sync()?;
        let per_op = t.elapsed().as_secs_f64() / iters as f64;
        // ANCHOR_END: smallop
        report(&dev.run(), round, iters, per_op);
    }
    Ok(())
}
