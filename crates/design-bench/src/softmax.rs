//! softmax: candle-nn's fused `softmax_last_dim` (one hand-written kernel per device) against the
//! same softmax composed of five ordinary ops, on attention scores of a prefill-like shape
//! (heads × n × n f32). Each is timed to a device sync (warm-up, then repeats: min / median / max),
//! and the two results are compared (max absolute difference).

use crate::device::Dev;
use bookrec::{fmt_duration, measure, record, record_stats, Stats};
use candle_core::{Result, Tensor, D};

pub const WARMUP: usize = 3;
pub const REPEATS: usize = 20;

// ANCHOR: composite
/// 不用融合内核的 softmax：五个普通算子，每个一个内核
pub fn softmax_composite(x: &Tensor) -> Result<Tensor> {
    // 先减去每行的最大值，exp 才不会溢出
    let max = x.max_keepdim(D::Minus1)?;
    let e = x.broadcast_sub(&max)?.exp()?;
    let sum = e.sum_keepdim(D::Minus1)?;
    e.broadcast_div(&sum)
}
// ANCHOR_END: composite

pub fn run(dev: &Dev, heads: usize, n: usize) -> Result<()> {
    let x = Tensor::randn(0f32, 1f32, (heads, n, n), &dev.device)?;
    dev.sync()?;
    let size = format!("{heads}x{n}x{n}");
    // ANCHOR: softmax_timing
    let time = |f: &dyn Fn(&Tensor) -> Result<Tensor>| -> Stats {
        measure(WARMUP, REPEATS, || {
            let y = f(&x).unwrap();
            // 同步之后才停表，y 活到同步之后
            dev.sync().unwrap();
            drop(y);
        })
    };
    let fused = time(&|x| candle_nn::ops::softmax_last_dim(x));
    let composite = time(&|x| softmax_composite(x));
    // ANCHOR_END: softmax_timing
    let diff = (candle_nn::ops::softmax_last_dim(&x)? - softmax_composite(&x)?)?
        .abs()?
        .flatten_all()?
        .max(0)?
        .to_scalar::<f32>()?;
    let tags = dev.tags().with("size", &size).with("reps", REPEATS);
    for (what, s) in [("fused", &fused), ("composite", &composite)] {
        println!(
            "candle {} softmax {size} f32 {what:<9}: min {} median {} (of {REPEATS}, after {WARMUP} warm-up)",
            dev.label(),
            fmt_duration(s.min),
            fmt_duration(s.median),
        );
        record_stats(&format!("softmax.{what}"), s, &tags);
    }
    println!("max |fused - composite| = {diff:e}");
    record("softmax.max_abs_diff", diff as f64, "", &tags);
    Ok(())
}
