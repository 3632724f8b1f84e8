//! 只做一次 CPU 矩阵乘的最小 candle 程序：量不同 feature 组合下二进制有多大。

use candle_core::{Device, Tensor};

fn main() -> candle_core::Result<()> {
    let a = Tensor::rand(-1f32, 1f32, (64, 64), &Device::Cpu)?;
    let c = a.matmul(&a)?;
    println!("{:?}", c.dims());
    Ok(())
}
