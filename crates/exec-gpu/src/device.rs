//! Device by name, and the tags every record of this program carries.

use burn::tensor::Device;

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
        "cuda" => missing("cuda", "build with `--features cuda`"),
        #[cfg(feature = "vulkan")]
        "vulkan" => Device::vulkan(burn::tensor::DeviceKind::DefaultDevice),
        #[cfg(not(feature = "vulkan"))]
        "vulkan" => missing("vulkan", "build with `--features vulkan`"),
        #[cfg(target_os = "macos")]
        "metal" => Device::metal(burn::tensor::DeviceKind::DefaultDevice),
        #[cfg(not(target_os = "macos"))]
        "metal" => missing(
            "metal",
            "burn's `metal` feature is enabled on macOS builds only",
        ),
        other => {
            eprintln!("unknown device {other:?}: one of flex, cuda, vulkan, metal");
            std::process::exit(2)
        }
    }
}

fn missing(name: &str, how: &str) -> ! {
    eprintln!("device {name:?} is not compiled into this binary: {how}");
    std::process::exit(2)
}

/// Tags for a record: framework and device always, then whatever the caller adds.
pub struct Tags(Vec<(&'static str, String)>);

impl Tags {
    pub fn new(device: &str) -> Self {
        Tags(vec![
            ("framework", "burn".into()),
            ("device", device.into()),
        ])
    }

    pub fn with(&self, key: &'static str, value: impl ToString) -> Self {
        let mut v = self.0.clone();
        v.push((key, value.to_string()));
        Tags(v)
    }

    pub fn get(&self) -> Vec<(&str, &str)> {
        self.0.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }
}
