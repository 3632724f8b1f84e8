//! mlp：4 → 16 → 1 的 MLP，ReLU，MSE，Adam（candle 是 weight_decay = 0 的 AdamW），学习率 1e-2，
//! 64 个样本。第一步单独计时，20 步预热，再各 200 步「读回」和「不读回」。

use std::time::Duration;

use crate::{fmt_duration, record, record_duration, record_stats, Run, Stats};

/// 学习率。
pub const LR: f64 = 1e-2;
/// 训练样本数（数据来自 [`crate::data::samples`]）。
pub const SAMPLES: usize = 64;
/// 计时之前的预热步数。
pub const WARMUP: usize = 20;
/// 「读回」和「不读回」各跑的步数。
pub const STEPS: usize = 200;

/// 第一步、每步读回的统计、不读回时每步的平均（含 / 不含最后一次同步），以及最后一步的 loss。
pub fn report(
    run: &Run,
    first: Duration,
    read: &Stats,
    loop_time: Duration,
    total: Duration,
    loss: f32,
) {
    let steps = STEPS as u32;
    let after = 1 + WARMUP + STEPS;
    println!(
        "{} {}: first step {}, read: median {} min {}, noread: {}/step (loop {}), loss after {after} steps {loss:.6}",
        run.framework,
        run.label,
        fmt_duration(first),
        fmt_duration(read.median),
        fmt_duration(read.min),
        fmt_duration(total / steps),
        fmt_duration(loop_time / steps),
    );
    let tags = run.tags();
    record_duration("mlp.first_step", first, &tags);
    record_stats("mlp.read.step", read, &tags);
    record_duration("mlp.noread.step", total / steps, &tags);
    record_duration("mlp.noread.loop_step", loop_time / steps, &tags);
    record(
        "mlp.loss",
        loss as f64,
        "",
        &tags.with("after_steps", after),
    );
}
