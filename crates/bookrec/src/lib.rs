//! 本书 Rust 实验共用的小工具：记录测量值、统一的计时方法。
//!
//! 实验程序一边打印给读者看的文字，一边用 [`record`] 把数值写成结构化记录。
//! 记录写到环境变量 `BOOK_RECORDS` 指定的文件（每行一个 JSON 对象）；
//! 没有设置这个变量时（例如手动运行程序），记录被丢弃，输出不变。
//!
//! 计时和 Python 一侧的 `snippets/bookrec.py` 用同一套方法：先预热，
//! 再重复 N 次，报告最小值、中位数和最大值。

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::time::{Duration, Instant};

pub mod data;
pub mod stats;
pub use stats::Stats;

/// 记录的值：数值或一段文字（例如分类结果 "fused"、后端名）。
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// 数值，单位由 `unit` 给出。
    Num(f64),
    /// 文字。
    Text(String),
    /// 是或否（例如「调用返回时是否已经算完」）。
    Bool(bool),
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Num(v)
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::Num(v as f64)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

/// 写一条记录：名字、值、单位（秒用 "s"，字节用 "B"，无单位用 ""），以及标签。
///
/// 标签区分同名记录，例如 `("device", "cuda")`、`("round", "2")`。
pub fn record(name: &str, value: impl Into<Value>, unit: &str, tags: &[(&str, &str)]) {
    let Ok(path) = std::env::var("BOOK_RECORDS") else {
        return;
    };
    let line = to_json(name, &value.into(), unit, tags);
    // 每条记录单独追加一行：程序中途崩溃时，已写的记录仍然完整。
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("BOOK_RECORDS={path}: {e}"));
    f.write_all(line.as_bytes()).expect("write record");
}

/// 记录一个时长（单位秒）。
pub fn record_duration(name: &str, d: Duration, tags: &[(&str, &str)]) {
    record(name, d.as_secs_f64(), "s", tags);
}

/// 记录一组计时的 min / median / max（名字后面加 `.min` 等后缀）。
pub fn record_stats(name: &str, s: &Stats, tags: &[(&str, &str)]) {
    record(&format!("{name}.min"), s.min.as_secs_f64(), "s", tags);
    record(&format!("{name}.median"), s.median.as_secs_f64(), "s", tags);
    record(&format!("{name}.max"), s.max.as_secs_f64(), "s", tags);
}

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
    let s = d.as_secs_f64();
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

fn to_json(name: &str, value: &Value, unit: &str, tags: &[(&str, &str)]) -> String {
    let mut out = String::from("{\"name\":");
    push_str(&mut out, name);
    out.push_str(",\"value\":");
    match value {
        Value::Num(v) if v.is_finite() => write!(out, "{v:e}").unwrap(),
        Value::Num(_) => out.push_str("null"),
        Value::Text(t) => push_str(&mut out, t),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    }
    out.push_str(",\"unit\":");
    push_str(&mut out, unit);
    out.push_str(",\"tags\":{");
    for (i, (k, v)) in tags.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_str(&mut out, k);
        out.push(':');
        push_str(&mut out, v);
    }
    out.push_str("}}\n");
    out
}

fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_and_formats() {
        let j = to_json("a\"b", &Value::Num(0.5), "s", &[("device", "cuda")]);
        assert_eq!(j, "{\"name\":\"a\\\"b\",\"value\":5e-1,\"unit\":\"s\",\"tags\":{\"device\":\"cuda\"}}\n");
        assert!(to_json("x", &Value::Num(f64::NAN), "", &[]).contains("null"));
    }

    #[test]
    fn durations_switch_units() {
        assert_eq!(fmt_duration(Duration::from_micros(812)), "812.000µs");
        assert_eq!(fmt_duration(Duration::from_millis(3)), "3.000ms");
        assert_eq!(fmt_duration(Duration::from_nanos(125)), "125.0ns");
    }
}
