//! 按名字选设备：cpu、cuda、metal。
//!
//! 名字不认识、或者这个二进制没有编译进那个后端，都以退出码 2 结束，
//! 并说出缺的是哪个 cargo feature。

use candle_core::{Device, Result};
use std::time::{Duration, Instant};

/// 一个打开的设备和它在输出里的叫法。
pub struct Dev {
    /// 命令行上的名字：cpu、cuda、metal。
    pub name: String,
    pub device: Device,
    /// GPU：`Device::new_cuda(0)` / `Device::new_metal(0)` 花的时间；CPU 没有这一步。
    pub init: Option<Duration>,
}

/// CPU 上矩阵乘走哪条路，由构建时的 feature 决定。
pub const CPU_LABEL: &str = if cfg!(feature = "accelerate") {
    "cpu(accelerate)"
} else {
    "cpu(gemm)"
};

impl Dev {
    pub fn open(name: &str) -> Dev {
        let (device, init) = match name {
            "cpu" => (Device::Cpu, None),
            "cuda" => timed(name, new_cuda),
            "metal" => timed(name, new_metal),
            other => fail(&format!(
                "unknown device `{other}`: candle devices are cpu, cuda, metal"
            )),
        };
        Dev {
            name: name.to_string(),
            device,
            init,
        }
    }

    /// 输出里的设备名：CPU 带上矩阵乘的实现，例如 `cpu(gemm)`。
    pub fn label(&self) -> &str {
        match self.name.as_str() {
            "cpu" => CPU_LABEL,
            other => other,
        }
    }

    pub fn is_gpu(&self) -> bool {
        !self.device.is_cpu()
    }

    pub fn sync(&self) -> Result<()> {
        self.device.synchronize()
    }

    /// 记录用的标签：framework、device，再加上 `extra`。
    pub fn tags<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut t = vec![("framework", "candle"), ("device", self.name.as_str())];
        t.extend_from_slice(extra);
        t
    }
}

fn timed(name: &str, open: fn() -> Result<Device>) -> (Device, Option<Duration>) {
    let t = Instant::now();
    match open() {
        Ok(d) => (d, Some(t.elapsed())),
        Err(e) => {
            eprintln!("design-bench: cannot open device `{name}`: {e}");
            std::process::exit(1)
        }
    }
}

#[cfg(feature = "cuda")]
fn new_cuda() -> Result<Device> {
    Device::new_cuda(0)
}

#[cfg(not(feature = "cuda"))]
fn new_cuda() -> Result<Device> {
    fail(
        "device `cuda` is not compiled into this binary: build design-bench with `--features cuda`",
    )
}

#[cfg(target_os = "macos")]
fn new_metal() -> Result<Device> {
    Device::new_metal(0)
}

#[cfg(not(target_os = "macos"))]
fn new_metal() -> Result<Device> {
    fail("device `metal` is not compiled into this binary: candle-core's `metal` feature is enabled only on macOS")
}

/// 用法错误：打印原因，退出码 2。
pub fn fail(msg: &str) -> ! {
    eprintln!("design-bench: {msg}");
    std::process::exit(2)
}
