//! 按名字选设备：cpu、cuda、metal。
//!
//! 名字不认识、或者这个二进制没有编译进那个后端，都以退出码 2 结束，
//! 并说出缺的是哪个 cargo feature。

use crate::PROGRAM;
use bookrec::{Run, Tags};
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
            other => PROGRAM.unknown_device(other, &["cpu", "cuda", "metal"]),
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

    /// 这次运行在输出和记录里的身份：candle、设备名、输出里的设备名。
    pub fn run(&self) -> Run<'_> {
        Run {
            framework: "candle",
            device: &self.name,
            label: self.label(),
        }
    }

    /// 记录用的标签：framework、device；再用 `with` 加上别的。
    pub fn tags(&self) -> Tags {
        self.run().tags()
    }
}

fn timed(name: &str, open: fn() -> Result<Device>) -> (Device, Option<Duration>) {
    let t = Instant::now();
    match open() {
        Ok(d) => (d, Some(t.elapsed())),
        Err(e) => PROGRAM.fail(&format!("cannot open device `{name}`: {e}")),
    }
}

#[cfg(feature = "cuda")]
fn new_cuda() -> Result<Device> {
    Device::new_cuda(0)
}

#[cfg(not(feature = "cuda"))]
fn new_cuda() -> Result<Device> {
    PROGRAM.not_compiled("cuda", "build design-bench with `--features cuda`")
}

// candle 的 metal feature 只能在 macOS 上编译（依赖的 objc2 在别的系统上拒绝编译），
// 所以这里按目标系统判断，不另设 feature；Linux 上的 CI 查不到这一支。
#[cfg(target_os = "macos")]
fn new_metal() -> Result<Device> {
    Device::new_metal(0)
}

#[cfg(not(target_os = "macos"))]
fn new_metal() -> Result<Device> {
    PROGRAM.not_compiled(
        "metal",
        "candle-core's `metal` feature is enabled only on macOS",
    )
}
