//! smallop：16 个 f32 的加法，循环 iters 次，跑 3 轮，报告每次的时间。
//! 张量这么小，量到的几乎全是框架本身的开销：分派、检查、引用计数、分配。

use crate::device::Dev;
use bookrec::{fmt_duration, record};
use burn::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

const ROUNDS: usize = 3;

pub fn run(dev: &Dev, iters: usize) {
    let a = Tensor::<1>::ones([16], &dev.device);
    let b = Tensor::<1>::ones([16], &dev.device);
    for round in 0..ROUNDS {
        // ANCHOR: smallop
        let t = Instant::now();
        for _ in 0..iters {
            black_box(a.clone() + b.clone());
        }
        dev.sync();
        let per_op = t.elapsed().as_secs_f64() / iters as f64;
        // ANCHOR_END: smallop
        println!(
            "burn {} add 16xf32 round {round}: {}/op",
            dev.label(),
            fmt_duration(Duration::from_secs_f64(per_op))
        );
        let (r, n) = (round.to_string(), iters.to_string());
        record(
            "smallop.per_op",
            per_op,
            "s",
            &dev.tags(&[("round", &r), ("iters", &n)]),
        );
    }
}
