//! candle 和 burn 共有的模式：同一个负载，同样的输出行，同样的记录名和标签。
//!
//! `design-bench`（candle）和 `design-burn`（burn）各自写测量的代码（页面逐行对照的就是这部分），
//! 测完把结果交给这里的 `report`：打印给读者看的一行，写记录。两边的记录名因此不会分叉，
//! 页面上的表格（`{records-table}`）按同一个名字把两边放在一行里。

pub mod chains;
pub mod matmul;
pub mod mlp;
pub mod smallop;

use crate::Tags;

/// 每个共有模式的名字（命令行上的第一个参数）。
pub const SHARED: [&str; 4] = ["matmul", "mlp", "chains", "smallop"];

/// 一次运行是谁：框架、命令行上的设备名、输出里的设备名。
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// `candle` 或 `burn`：输出行的开头，也是记录的 `framework` 标签。
    pub framework: &'a str,
    /// 命令行上的设备名（`cpu`、`flex`、`cuda`、`metal`……），记录的 `device` 标签。
    pub device: &'a str,
    /// 输出里的设备名，例如 candle CPU 的 `cpu(gemm)`。
    pub label: &'a str,
}

impl Run<'_> {
    /// 每条记录都带的两个标签：`framework` 和 `device`。
    pub fn tags(&self) -> Tags {
        Tags::new()
            .with("framework", self.framework)
            .with("device", self.device)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::Run;

    pub(crate) const RUN: Run = Run {
        framework: "candle",
        device: "cpu",
        label: "cpu(gemm)",
    };

    /// Name and tag keys of each JSON line, in order.
    pub(crate) fn names_and_keys(lines: &[String]) -> Vec<(String, Vec<String>)> {
        lines
            .iter()
            .map(|l| {
                let name = l[9..l.find("\",").unwrap()].to_string();
                let tags = &l[l.find("\"tags\":{").unwrap() + 8..];
                let keys = tags
                    .split(',')
                    .filter_map(|kv| kv.split_once(':'))
                    .map(|(k, _)| k.trim_matches('"').to_string())
                    .collect();
                (name, keys)
            })
            .collect()
    }
}
