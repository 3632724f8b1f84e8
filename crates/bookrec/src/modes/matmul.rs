//! matmul：两个 n×n 的 f32 随机矩阵，先同步；第一次 matmul 计时到同步完成，再跑 20 次。

use std::time::Duration;

use crate::{fmt_duration, record, record_duration, record_stats, Run, Stats};

/// GPU 上建设备花的时间（`what` 说明量的是什么，例如 `new_cuda`）：打印一行，记为 `matmul.device_init`。
pub fn device_init(run: &Run, what: &str, init: Duration) {
    println!("{} {what}: {}", run.framework, fmt_duration(init));
    record_duration("matmul.device_init", init, &run.tags());
}

/// 第一次和之后的时间，以及按中位数算的 GFLOP/s。
pub fn report(run: &Run, n: usize, first: Duration, later: &Stats) {
    let gflops = 2.0 * (n as f64).powi(3) / later.median.as_secs_f64() / 1e9;
    println!(
        "{} {} {n}x{n} f32: first {}  later min {} median {} ({gflops:.0} GFLOP/s)",
        run.framework,
        run.label,
        fmt_duration(first),
        fmt_duration(later.min),
        fmt_duration(later.median),
    );
    let tags = run.tags().with("size", n);
    record("matmul.path", run.label, "", &tags);
    record_duration("matmul.first", first, &tags);
    record_stats("matmul.later", later, &tags);
    record("matmul.gflops", gflops, "GFLOP/s", &tags);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::tests::{names_and_keys, RUN};
    use crate::record::tests::captured;

    #[test]
    fn records_carry_the_size() {
        let ms = Duration::from_millis;
        let later = Stats::from_samples(&[ms(2), ms(3)]);
        let lines = captured(|| report(&RUN, 64, ms(5), &later));
        let got = names_and_keys(&lines);
        assert_eq!(got.len(), 6);
        assert!(got
            .iter()
            .all(|(_, k)| k == &["framework", "device", "size"]));
        assert_eq!(got[1].0, "matmul.first");
    }
}
