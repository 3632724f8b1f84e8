//! shape：和 candle 的 errors 模式同一个形状错误（[2, 3] x [2, 3]）。
//! burn 的张量方法返回张量本身，形状不对在调用处 panic，进程以 101 结束。

use crate::device::Dev;
use burn::prelude::*;

pub fn run(dev: &Dev) {
    // ANCHOR: shape
    let a = Tensor::<2>::zeros([2, 3], &dev.device);
    println!("matmul [2, 3] x [2, 3] ...");
    // 内维 3 对 2：matmul 里的 TensorCheck 当场 panic，不返回
    let c = a.clone().matmul(a);
    println!("not reached: {:?}", c.dims());
    // ANCHOR_END: shape
}
