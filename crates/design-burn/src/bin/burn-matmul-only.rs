//! The smallest burn program: one matmul on Flex. It reports the size of its own file, so the book
//! measures what a build with these features costs (release, symbols stripped: Cargo.toml).

use burn::prelude::*;
use burn::tensor::Distribution;

fn main() {
    // ANCHOR: binsize
    let device = Device::flex();
    let a = Tensor::<2>::random([64, 64], Distribution::Uniform(-1.0, 1.0), &device);
    let c = a.clone().matmul(a);
    println!("{:?}", c.dims());
    // ANCHOR_END: binsize
    let features: Vec<&str> = [
        ("cuda", cfg!(feature = "cuda")),
        ("vulkan", cfg!(feature = "vulkan")),
        ("metal", cfg!(any(feature = "metal", target_os = "macos"))),
    ]
    .into_iter()
    .filter_map(|(f, on)| on.then_some(f))
    .collect();
    bookrec::report_own_size("burn", "flex", &features);
}
