//! The smallest candle program: one CPU matmul. It reports the size of its own file, so the book
//! measures what a build with these features costs (release, symbols stripped: Cargo.toml).

use candle_core::{Device, Tensor};

fn main() -> candle_core::Result<()> {
    // ANCHOR: binsize
    let a = Tensor::rand(-1f32, 1f32, (64, 64), &Device::Cpu)?;
    let c = a.matmul(&a)?;
    println!("{:?}", c.dims());
    // ANCHOR_END: binsize
    let features: Vec<&str> = [
        ("cuda", cfg!(feature = "cuda")),
        ("metal", cfg!(target_os = "macos")),
    ]
    .into_iter()
    .filter_map(|(f, on)| on.then_some(f))
    .collect();
    bookrec::report_own_size("candle", "cpu", &features);
    Ok(())
}
