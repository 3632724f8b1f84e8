//! 一组计时的统计量。

use std::time::Duration;

/// 最小值、中位数、最大值和样本数。两边（Python / Rust）用同一种中位数：
/// 偶数个样本时取中间两个的平均。
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// 最短的一次。
    pub min: Duration,
    /// 中位数。
    pub median: Duration,
    /// 最长的一次。
    pub max: Duration,
    /// 样本数。
    pub n: usize,
}

impl Stats {
    /// 从样本算统计量；样本不能为空。
    pub fn from_samples(samples: &[Duration]) -> Stats {
        assert!(!samples.is_empty(), "Stats::from_samples: no samples");
        let mut s = samples.to_vec();
        s.sort();
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2
        };
        Stats {
            min: s[0],
            median,
            max: s[n - 1],
            n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_count_is_mean_of_middle() {
        let ms = |v: u64| Duration::from_millis(v);
        let s = Stats::from_samples(&[ms(4), ms(1), ms(3), ms(2)]);
        assert_eq!(
            (s.min, s.median, s.max, s.n),
            (ms(1), Duration::from_micros(2500), ms(4), 4)
        );
    }
}
