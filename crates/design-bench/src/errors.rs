//! errors：形状不对、设备不对，在 candle 里都是一个 Err 值，程序接着往下走。
//! （burn 的同一个形状错误在调用处 panic：design-burn 的 shape 模式。）
//! 设了 RUST_BACKTRACE / RUST_LIB_BACKTRACE 时，原文后面会多一段调用栈。

use crate::device::Dev;
use bookrec::record;
use candle_core::{DType, Device, Result, Tensor};

pub fn run(dev: &Dev) -> Result<()> {
    // ANCHOR: errors
    let a = Tensor::zeros((2, 3), DType::F32, &dev.device)?;
    let b = Tensor::zeros(3, DType::F32, &dev.device)?;
    // add 不自动广播：[2, 3] + [3] 得到一个 Err 值
    let add = &a + &b;
    if let Err(e) = &add {
        println!("add [2, 3] + [3]: Err: {e}");
    }
    // 内维 3 对 2，不能相乘
    let matmul = a.matmul(&a);
    if let Err(e) = &matmul {
        println!("matmul [2, 3] x [2, 3]: Err: {e}");
    }
    // ANCHOR_END: errors
    let tags = dev.tags();
    record("errors.add", err_text(&add), "", &tags);
    record("errors.matmul", err_text(&matmul), "", &tags);

    if dev.is_gpu() {
        // ANCHOR: device_mismatch
        // 一个在 CPU 上，一个在 GPU 上
        let c = Tensor::zeros((2, 3), DType::F32, &Device::Cpu)?;
        let mixed = &c + &a;
        if let Err(e) = &mixed {
            println!("add cpu + {}: Err: {e}", dev.name);
        }
        // ANCHOR_END: device_mismatch
        record("errors.device", err_text(&mixed), "", &tags);
    } else {
        println!("device mismatch: needs a GPU device next to the CPU (not run on cpu)");
    }
    println!("still running after the errors");
    Ok(())
}

fn err_text(r: &Result<Tensor>) -> String {
    match r {
        Ok(_) => "Ok".to_string(),
        Err(e) => e.to_string(),
    }
}
