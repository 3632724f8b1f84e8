//! 按名字选设备：flex、cuda、vulkan、metal。
//!
//! 名字不认识、或者这个二进制没有编译进那个后端，都以退出码 2 结束，
//! 并说出缺的是哪个 cargo feature。

use crate::PROGRAM;
use bookrec::Run;
use burn::prelude::*;
use std::time::{Duration, Instant};

/// 一个打开的设备和它在输出里的叫法。
pub struct Dev {
    /// 命令行上的名字：flex、cuda、vulkan、metal。
    pub name: String,
    pub device: Device,
    /// GPU：建设备加上第一个 op 并同步的时间（burn 的设备是惰性初始化的）；Flex 没有这一步。
    pub init: Option<Duration>,
}

impl Dev {
    pub fn open(name: &str) -> Dev {
        let (device, init) = match name {
            "flex" => (Device::flex(), None),
            "cuda" => timed(new_cuda),
            "vulkan" => timed(new_vulkan),
            "metal" => timed(new_metal),
            other => PROGRAM.unknown_device(other, &["flex", "cuda", "vulkan", "metal"]),
        };
        Dev {
            name: name.to_string(),
            device,
            init,
        }
    }

    /// 输出里的设备名。
    pub fn label(&self) -> &str {
        &self.name
    }

    pub fn sync(&self) {
        self.device.sync().expect("device sync");
    }

    /// 这次运行在输出和记录里的身份：burn、设备名、输出里的设备名。
    pub fn run(&self) -> Run<'_> {
        Run {
            framework: "burn",
            device: &self.name,
            label: self.label(),
        }
    }
}

/// 建设备、做一个 op、同步：burn 在第一次用到设备时才真正初始化。
fn timed(open: fn() -> Device) -> (Device, Option<Duration>) {
    let t = Instant::now();
    let device = open();
    let one = Tensor::<1>::ones([1], &device);
    let _ = one.into_data();
    (device, Some(t.elapsed()))
}

#[cfg(feature = "cuda")]
fn new_cuda() -> Device {
    Device::cuda(0)
}

#[cfg(not(feature = "cuda"))]
fn new_cuda() -> Device {
    PROGRAM.not_compiled("cuda", "build design-burn with `--features cuda`")
}

#[cfg(feature = "vulkan")]
fn new_vulkan() -> Device {
    Device::vulkan(DeviceKind::DefaultDevice)
}

#[cfg(not(feature = "vulkan"))]
fn new_vulkan() -> Device {
    PROGRAM.not_compiled("vulkan", "build design-burn with `--features vulkan`")
}

// Metal：macOS 上自动打开（Cargo.toml 的 target 依赖）；别的系统上 `--features metal` 只为类型检查。
#[cfg(any(feature = "metal", target_os = "macos"))]
fn new_metal() -> Device {
    Device::metal(DeviceKind::DefaultDevice)
}

#[cfg(not(any(feature = "metal", target_os = "macos")))]
fn new_metal() -> Device {
    PROGRAM.not_compiled(
        "metal",
        "burn's `metal` feature is on by default on macOS only",
    )
}
