//! 本书 Rust 实验共用的小工具：记录测量值、统一的计时方法、命令行和报错，
//! 以及 candle 和 burn 两边共有的模式的报告。
//!
//! 实验程序一边打印给读者看的文字，一边用 [`record`] 把数值写成结构化记录。
//! 记录写到环境变量 `BOOK_RECORDS` 指定的文件（每行一个 JSON 对象）；
//! 没有设置这个变量时（例如手动运行程序），记录被丢弃，输出不变。
//!
//! 计时和 Python 一侧的 `snippets/bookrec.py` 用同一套方法：先预热，
//! 再重复 N 次，报告最小值、中位数和最大值。
//!
//! candle（`design-bench`）和 burn（`design-burn`）共有的模式（matmul、mlp、chains、smallop）
//! 在 [`modes`] 里只写一次：两边的负载常量、输出行和记录名出自同一份代码，页面上的表格才能逐行对比。

use std::time::{Duration, Instant};

pub mod cli;
pub mod data;
pub mod modes;
pub mod record;
pub mod stats;

pub use modes::Run;
pub use record::{record, record_duration, record_stats, Tags, Value};
pub use stats::Stats;

/// 计时：先调用 `warmup` 次不计时，再计时 `repeats` 次。
///
/// `f` 自己负责在返回前同步设备（否则量到的只是「提交」的时间）。
pub fn measure<F: FnMut()>(warmup: usize, repeats: usize, mut f: F) -> Stats {
    for _ in 0..warmup {
        f();
    }
    let samples: Vec<Duration> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    Stats::from_samples(&samples)
}

/// 把时长写成读者习惯的样子：`812.4µs`、`3.21ms`、`1.94s`。
pub fn fmt_duration(d: Duration) -> String {
    fmt_secs(d.as_secs_f64())
}

/// 同上，但直接用秒数（f64）：每个 op 的平均时间常常不是整纳秒，先转成 Duration 会截成整数，
/// 打印出 `77.0ns` 这样的假小数位。
pub fn fmt_secs(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3}s")
    } else if s >= 1e-3 {
        format!("{:.3}ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.3}µs", s * 1e6)
    } else {
        format!("{:.1}ns", s * 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_switch_units() {
        assert_eq!(fmt_duration(Duration::from_micros(812)), "812.000µs");
        assert_eq!(fmt_duration(Duration::from_millis(3)), "3.000ms");
        assert_eq!(fmt_duration(Duration::from_nanos(125)), "125.0ns");
        assert_eq!(fmt_duration(Duration::from_millis(1940)), "1.940s");
    }

    #[test]
    fn seconds_keep_their_fraction_of_a_nanosecond() {
        assert_eq!(fmt_secs(77.5e-9), "77.5ns");
        assert_eq!(fmt_secs(2.5e-6), "2.500µs");
    }

    #[test]
    fn measure_runs_warmup_then_repeats() {
        let mut calls = 0;
        let s = measure(2, 3, || calls += 1);
        assert_eq!((calls, s.n), (5, 3));
    }
}

/// Print and record (`binsize.bytes` and `binsize.backends`, tags framework and backends) the size of the running
/// executable: the binary-size experiments of the book call this after their one computation.
/// `base` is the backend every build has; `features` the GPU backends compiled in.
pub fn report_own_size(framework: &str, base: &str, features: &[&str]) {
    let exe = std::env::current_exe().expect("current_exe");
    let bytes = std::fs::metadata(&exe)
        .expect("metadata of the running executable")
        .len();
    let backends = std::iter::once(base)
        .chain(features.iter().copied())
        .collect::<Vec<_>>()
        .join("+");
    println!(
        "{framework} ({backends}): {:.1} MiB",
        bytes as f64 / (1u64 << 20) as f64
    );
    let tags = Tags::new()
        .with("framework", framework)
        .with("backends", &backends);
    record("binsize.bytes", bytes as f64, "B", &tags);
    record("binsize.backends", backends.as_str(), "", &tags);
}
