//! 只做一次 CPU 矩阵乘的最小 burn 程序：量不同 feature 组合下二进制有多大。

use burn::prelude::*;
use burn::tensor::Distribution;

fn main() {
    let device = Device::flex();
    let a = Tensor::<2>::random([64, 64], Distribution::Uniform(-1.0, 1.0), &device);
    let c = a.clone().matmul(a);
    println!("{:?}", c.dims());
}
