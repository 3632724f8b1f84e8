//! Device by name, and the tags every record of this program carries.

use bookrec::{Run, Tags};
use burn::tensor::Device;

use crate::PROGRAM;

/// The device for a name given on the command line: `flex`, `cuda`, `vulkan` or `metal`.
///
/// A name whose backend is not compiled into this binary exits with code 2 and says
/// which cargo feature is missing, instead of panicking deep inside burn.
pub fn device(name: &str) -> Device {
    match name {
        "flex" => Device::flex(),
        #[cfg(feature = "cuda")]
        "cuda" => Device::cuda(0),
        #[cfg(not(feature = "cuda"))]
        "cuda" => PROGRAM.not_compiled("cuda", "build with `--features cuda`"),
        #[cfg(feature = "vulkan")]
        "vulkan" => Device::vulkan(burn::tensor::DeviceKind::DefaultDevice),
        #[cfg(not(feature = "vulkan"))]
        "vulkan" => PROGRAM.not_compiled("vulkan", "build with `--features vulkan`"),
        // On by default on macOS (Cargo.toml); elsewhere `--features metal` only type-checks it.
        #[cfg(any(feature = "metal", target_os = "macos"))]
        "metal" => Device::metal(burn::tensor::DeviceKind::DefaultDevice),
        #[cfg(not(any(feature = "metal", target_os = "macos")))]
        "metal" => PROGRAM.not_compiled(
            "metal",
            "burn's `metal` feature is on by default on macOS only",
        ),
        other => PROGRAM.unknown_device(other, &["flex", "cuda", "vulkan", "metal"]),
    }
}

/// Tags for a record of this program on `device`: framework (burn) and device; add more with `with`.
pub fn tags(device: &str) -> Tags {
    Run {
        framework: "burn",
        device,
        label: device,
    }
    .tags()
}
