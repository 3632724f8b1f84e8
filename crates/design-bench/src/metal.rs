//! Two points about candle's Metal device that depend on whether the build has Metal.
//!
//! metal_twice (builds with Metal, i.e. macOS): `Device::new_metal(0)` called twice gives two
//! devices that `same_device` tells apart although both are the same GPU; a tensor from one plus a
//! tensor from the other is then a device mismatch.
//! dummy_metal (builds without Metal, i.e. not macOS): the `Device::Metal` variant still exists,
//! holding candle's placeholder `MetalDevice`; `new_metal` returns `Err`, but a hand-made
//! `Device::Metal(MetalDevice)` answers `location()` with a panic.
//! On the other kind of build each mode says why it cannot run and exits with code 3.

use crate::device::Dev;
use bookrec::record;
use candle_core::Result;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Exit code of a mode that this build cannot run (neither a usage error, 2, nor a failure, 1).
pub const WRONG_BUILD: i32 = 3;

fn outcome<T: std::fmt::Debug>(f: impl FnOnce() -> Result<T>) -> String {
    std::panic::set_hook(Box::new(|_| {}));
    let r = catch_unwind(AssertUnwindSafe(f));
    let _ = std::panic::take_hook();
    match r {
        Ok(Ok(v)) => format!("Ok: {v:?}"),
        Ok(Err(e)) => format!("Err: {}", e.to_string().lines().next().unwrap_or("")),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            format!("panic: {msg}")
        }
    }
}

fn report(dev: &Dev, name: &str, what: &str, outcome: &str) {
    println!("{what}: {outcome}");
    let tags = dev.tags();
    let kind = outcome.split(':').next().unwrap_or("");
    record(name, kind, "", &tags);
    record(&format!("{name}.detail"), outcome, "", &tags);
}

#[cfg(target_os = "macos")]
pub fn run_twice(dev: &Dev) -> Result<()> {
    use candle_core::{DType, Device, Tensor};
    // ANCHOR: metal_twice
    // 同一块 GPU，打开两次
    let d1 = Device::new_metal(0)?;
    let d2 = Device::new_metal(0)?;
    let same = d1.same_device(&d2);
    let same_location = d1.location() == d2.location();
    let a = Tensor::ones(3, DType::F32, &d1)?;
    let b = Tensor::ones(3, DType::F32, &d2)?;
    // 两个设备上的张量相加
    let mixed = outcome(|| (&a + &b)?.to_vec1::<f32>());
    // ANCHOR_END: metal_twice
    println!(
        "d1 {:?}, d2 {:?}: same_device {same}, same location {same_location}",
        d1.location(),
        d2.location()
    );
    let tags = dev.tags();
    record("metal_twice.same_device", same, "", &tags);
    record("metal_twice.same_location", same_location, "", &tags);
    report(dev, "metal_twice.mix", "a (on d1) + b (on d2)", &mixed);
    Ok(())
}

#[cfg(not(target_os = "macos"))]
pub fn run_twice(_dev: &Dev) -> Result<()> {
    eprintln!(
        "design-bench: metal_twice needs a build with candle's `metal` feature, which is enabled only on macOS"
    );
    std::process::exit(WRONG_BUILD)
}

#[cfg(not(target_os = "macos"))]
pub fn run_dummy(dev: &Dev) -> Result<()> {
    use candle_core::{Device, MetalDevice};
    // ANCHOR: dummy_metal
    // 没编进 Metal 的构建：new_metal 返回 Err
    let opened = outcome(|| Device::new_metal(0).map(|d| d.location()));
    // 占位类型照样能手写出一个 Device::Metal
    let dummy = Device::Metal(MetalDevice);
    let located = outcome(|| Ok(dummy.location()));
    // ANCHOR_END: dummy_metal
    report(
        dev,
        "dummy_metal.new_metal",
        "Device::new_metal(0)",
        &opened,
    );
    report(
        dev,
        "dummy_metal.location",
        "Device::Metal(MetalDevice).location()",
        &located,
    );
    Ok(())
}

#[cfg(target_os = "macos")]
pub fn run_dummy(_dev: &Dev) -> Result<()> {
    eprintln!(
        "design-bench: dummy_metal needs a build without Metal; on macOS candle's `metal` feature is always on"
    );
    std::process::exit(WRONG_BUILD)
}
