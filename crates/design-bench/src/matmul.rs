//! matmul：两个 n×n 的 f32 随机矩阵，先同步；第一次 matmul 计时到同步完成，再跑 20 次。

use crate::device::Dev;
use bookrec::modes::matmul;
use bookrec::{fmt_duration, measure, record_stats, Stats};
use candle_core::{Result, Tensor};
use std::time::Instant;
#[cfg(feature = "cuda")]
use {candle_core::Device, std::time::Duration};

pub fn run(dev: &Dev, n: usize) -> Result<()> {
    if let Some(init) = dev.init {
        matmul::device_init(&dev.run(), &format!("new_{}", dev.name), init);
    }
    // ANCHOR: matmul_timing
    let a = Tensor::rand(-1f32, 1f32, (n, n), &dev.device)?;
    let b = Tensor::rand(-1f32, 1f32, (n, n), &dev.device)?;
    dev.sync()?;
    let t = Instant::now();
    let c = a.matmul(&b)?;
    dev.sync()?;
    let first = t.elapsed();
    // 之后每次都同步，c 活到同步之后
    let later = measure(0, 20, || {
        let c = a.matmul(&b).unwrap();
        dev.sync().unwrap();
        drop(c);
    });
    // ANCHOR_END: matmul_timing
    drop(c);
    matmul::report(&dev.run(), n, first, &later);
    if let Some(s) = device_time(dev, &a, &b)? {
        println!(
            "candle {} {n}x{n} f32: device time min {} median {} (CUDA events)",
            dev.label(),
            fmt_duration(s.min),
            fmt_duration(s.median)
        );
        let tags = dev.tags().with("size", n).with("timing", "device");
        record_stats("matmul.device", &s, &tags);
    }
    Ok(())
}

/// CUDA 上矩阵乘本身在设备上花的时间：同一条流上前后各记一个事件，先跑一次（不记），再量 20 次。
/// 别的设备没有这个数（None）。
#[cfg(feature = "cuda")]
fn device_time(dev: &Dev, a: &Tensor, b: &Tensor) -> Result<Option<Stats>> {
    use candle_core::cuda_backend::cudarc::driver::sys::CUevent_flags;
    let Device::Cuda(cuda) = &dev.device else {
        return Ok(None);
    };
    let fail = |e| candle_core::Error::Msg(format!("CUDA event: {e:?}"));
    let stream = cuda.cuda_stream();
    let mut samples = Vec::new();
    for run in 0..21 {
        // ANCHOR: matmul_device
        let start = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(fail)?;
        let c = a.matmul(b)?;
        let end = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(fail)?;
        // 等两个事件都完成，读出它们之间的毫秒数
        let ms = start.elapsed_ms(&end).map_err(fail)?;
        // ANCHOR_END: matmul_device
        drop(c);
        if run > 0 {
            samples.push(Duration::from_secs_f64(f64::from(ms) / 1e3));
        }
    }
    Ok(Some(Stats::from_samples(&samples)))
}

#[cfg(not(feature = "cuda"))]
fn device_time(_: &Dev, _: &Tensor, _: &Tensor) -> Result<Option<Stats>> {
    Ok(None)
}
