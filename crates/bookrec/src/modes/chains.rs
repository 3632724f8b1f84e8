//! chains：两串逐元素 op，n×n f32。每轮对 5 组输入各算一次、保留结果、同步一次；
//! 第一次计算单独计时（新进程里的第一次）。

use std::time::Duration;

use crate::{fmt_duration, record, record_duration, record_stats, Run, Stats};

/// 每轮算几组输入。
pub const INPUTS: usize = 5;

/// 一串 op（`chain8` 或 `expr`）：第一次的时间，和每轮折合到一次计算的时间。
pub fn report(run: &Run, chain: &str, n: usize, first: Duration, per_eval: &[Duration]) {
    let s = Stats::from_samples(per_eval);
    println!(
        "{} {} {chain} {n}x{n} f32: first evaluation {}",
        run.framework,
        run.label,
        fmt_duration(first)
    );
    println!(
        "{} {} {chain}: per evaluation min {} median {} (of {} rounds)",
        run.framework,
        run.label,
        fmt_duration(s.min),
        fmt_duration(s.median),
        s.n,
    );
    let tags = run.tags().with("chain", chain).with("size", n);
    record_duration("chains.first", first, &tags);
    record_stats("chains.per_eval", &s, &tags);
    for (round, d) in per_eval.iter().enumerate() {
        record_duration("chains.round", *d, &tags.with("round", round));
    }
    record("chains.inputs_per_round", INPUTS, "", &tags);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::tests::{names_and_keys, RUN};
    use crate::record::tests::captured;

    #[test]
    fn one_round_record_per_round() {
        let d = [Duration::from_millis(1); 3];
        let lines = captured(|| report(&RUN, "expr", 8, d[0], &d));
        let rounds: Vec<_> = names_and_keys(&lines)
            .into_iter()
            .filter(|(n, _)| n == "chains.round")
            .collect();
        assert_eq!(rounds.len(), 3);
        assert_eq!(
            rounds[0].1,
            ["framework", "device", "chain", "size", "round"]
        );
    }
}
