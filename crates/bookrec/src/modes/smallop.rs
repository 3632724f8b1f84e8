//! smallop：16 个 f32 的加法，循环 iters 次，跑 3 轮，报告每次的时间。
//! 张量这么小，量到的几乎全是框架本身的开销：分派、检查、取锁或引用计数、分配。

use crate::{fmt_secs, record, Run};

/// 跑几轮。
pub const ROUNDS: usize = 3;

/// 一轮：每次加法的时间（秒）。
pub fn report(run: &Run, round: usize, iters: usize, per_op: f64) {
    println!(
        "{} {} add 16xf32 round {round}: {}/op",
        run.framework,
        run.label,
        fmt_secs(per_op)
    );
    let tags = run.tags().with("round", round).with("iters", iters);
    record("smallop.per_op", per_op, "s", &tags);
}
