//! encode: many tiny ops queued, one sync at the end. On a GPU each op only records a kernel
//! (Metal: encodes it into the shared compute encoder; CUDA: launches it on the stream) and
//! returns; the time per op is the CPU-side cost of that, the kernels themselves being tiny.
//! Rounds after a warm-up round; the per-op time of each round is recorded.

use crate::device::Dev;
use bookrec::{fmt_duration, fmt_secs, record};
use candle_core::{DType, Result, Tensor};
use std::time::{Duration, Instant};

pub const ROUNDS: usize = 5;

pub fn run(dev: &Dev, ops: usize) -> Result<()> {
    let a = Tensor::ones(16, DType::F32, &dev.device)?;
    let b = Tensor::ones(16, DType::F32, &dev.device)?;
    let tags = dev.tags().with("iters", ops);
    // round 0 is the warm-up: the kernel is compiled or loaded there
    for round in 0..=ROUNDS {
        // ANCHOR: encode
        let t = Instant::now();
        let mut acc = a.clone();
        for _ in 0..ops {
            // 每次加法只把一个内核交给设备就返回
            acc = (&acc + &b)?;
        }
        let queued = t.elapsed();
        // 最后同步一次：设备把排队的内核都做完
        dev.sync()?;
        let total = t.elapsed();
        // ANCHOR_END: encode
        drop(acc);
        let per = |d: Duration| d.as_secs_f64() / ops as f64;
        if round == 0 {
            println!(
                "candle {} warm-up round: {ops} adds of 16 f32 in {}",
                dev.label(),
                fmt_duration(total)
            );
            continue;
        }
        println!(
            "candle {} round {round}: {ops} adds of 16 f32, queued in {} ({}/op), synced after {} ({}/op)",
            dev.label(),
            fmt_duration(queued),
            fmt_secs(per(queued)),
            fmt_duration(total),
            fmt_secs(per(total)),
        );
        let tags = tags.with("round", round);
        record("encode.per_op_queued", per(queued), "s", &tags);
        record("encode.per_op", per(total), "s", &tags);
    }
    Ok(())
}
