//! 记录：程序把测量值写成一行一个 JSON 对象，追加到环境变量 `BOOK_RECORDS` 指定的文件。
//!
//! 没有设置这个变量时（例如手动运行程序），记录被丢弃，输出不变。

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::time::Duration;

use crate::Stats;

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

/// 一条记录的标签：区分同名记录的键值对，按加入的顺序写出。
///
/// 每个实验程序的记录都以 `framework` 和 `device` 开头（见 [`crate::modes::Run::tags`]），
/// 再用 [`Tags::with`] 加上这一条自己的，例如 `size`、`round`。
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags(Vec<(String, String)>);

impl Tags {
    /// 没有标签。
    pub fn new() -> Tags {
        Tags(Vec::new())
    }

    /// 多一个标签的副本；值写成文字（数字 4096 写成 "4096"）。
    pub fn with(&self, key: &str, value: impl std::fmt::Display) -> Tags {
        let mut pairs = self.0.clone();
        pairs.push((key.to_string(), value.to_string()));
        Tags(pairs)
    }

    /// 按加入的顺序给出每个标签。
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// 写一条记录：名字、值、单位（秒用 "s"，字节用 "B"，无单位用 ""），以及标签。
pub fn record(name: &str, value: impl Into<Value>, unit: &str, tags: &Tags) {
    let line = to_json(name, &value.into(), unit, tags);
    #[cfg(test)]
    if tests::capture(&line) {
        return;
    }
    let Ok(path) = std::env::var("BOOK_RECORDS") else {
        return;
    };
    // 每条记录单独追加一行：程序中途崩溃时，已写的记录仍然完整。
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("BOOK_RECORDS={path}: {e}"));
    f.write_all(line.as_bytes()).expect("write record");
}

/// 记录一个时长（单位秒）。
pub fn record_duration(name: &str, d: Duration, tags: &Tags) {
    record(name, d.as_secs_f64(), "s", tags);
}

/// 记录一组计时的 min / median / max（名字后面加 `.min` 等后缀）。
pub fn record_stats(name: &str, s: &Stats, tags: &Tags) {
    record(&format!("{name}.min"), s.min.as_secs_f64(), "s", tags);
    record(&format!("{name}.median"), s.median.as_secs_f64(), "s", tags);
    record(&format!("{name}.max"), s.max.as_secs_f64(), "s", tags);
}

fn to_json(name: &str, value: &Value, unit: &str, tags: &Tags) -> String {
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
pub(crate) mod tests {
    use super::*;
    use std::cell::RefCell;

    thread_local! {
        static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
    }

    /// While `captured` runs on this thread, records go to a list instead of `BOOK_RECORDS`.
    pub(crate) fn capture(line: &str) -> bool {
        CAPTURED.with(|c| match c.borrow_mut().as_mut() {
            Some(lines) => {
                lines.push(line.to_string());
                true
            }
            None => false,
        })
    }

    /// The JSON lines `f` records.
    pub(crate) fn captured(f: impl FnOnce()) -> Vec<String> {
        CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
        f();
        CAPTURED.with(|c| c.borrow_mut().take().unwrap())
    }

    #[test]
    fn json_escapes_and_formats() {
        let tags = Tags::new().with("device", "cuda").with("size", 4096);
        let j = to_json("a\"b", &Value::Num(0.5), "s", &tags);
        assert_eq!(
            j,
            "{\"name\":\"a\\\"b\",\"value\":5e-1,\"unit\":\"s\",\"tags\":{\"device\":\"cuda\",\"size\":\"4096\"}}\n"
        );
        assert!(to_json("x", &Value::Num(f64::NAN), "", &Tags::new()).contains("null"));
    }

    #[test]
    fn with_leaves_the_original_alone() {
        let base = Tags::new().with("framework", "burn");
        let more = base.with("round", 2);
        assert_eq!(base.iter().count(), 1);
        assert_eq!(more.iter().last(), Some(("round", "2")));
    }

    #[test]
    fn stats_become_three_records() {
        let ms = Duration::from_millis;
        let s = Stats::from_samples(&[ms(1), ms(2), ms(4)]);
        let lines = captured(|| record_stats("x.wall", &s, &Tags::new()));
        let names: Vec<&str> = lines
            .iter()
            .map(|l| &l[9..l.find("\",").unwrap()])
            .collect();
        assert_eq!(names, ["x.wall.min", "x.wall.median", "x.wall.max"]);
    }
}
