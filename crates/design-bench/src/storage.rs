//! 数据放在 Arc<RwLock<Storage>> 里的后果：
//! views（clone 和视图的成本，copy() 复制多少），deadlock（inplace_op2 自锁），
//! varset（Var::set 拒绝共享 storage 的来源）。

use crate::device::Dev;
use bookrec::{fmt_secs, measure, record};
use candle_core::{
    CpuStorage, CudaStorage, DType, InplaceOp2, Layout, MetalStorage, Result, Storage, Tensor, Var,
};
use std::hint::black_box;
use std::io::Write;

/// 每个 op 的时间（秒）：一轮做 iters 次，5 轮取中位数。
fn per_op(iters: usize, mut f: impl FnMut()) -> f64 {
    let s = measure(1, 5, || {
        for _ in 0..iters {
            f();
        }
    });
    s.median.as_secs_f64() / iters as f64
}

pub fn run_views(dev: &Dev, iters: usize) -> Result<()> {
    let small = Tensor::zeros((4, 4), DType::F32, &dev.device)?;
    let large = Tensor::zeros((1024, 1024), DType::F32, &dev.device)?;
    for (size, t) in [("4x4", &small), ("1024x1024", &large)] {
        // ANCHOR: views
        // clone 只是 Arc 计数加一；t() 和 narrow 新建一个 Tensor_，共享 storage
        let clone = per_op(iters, || drop(black_box(t.clone())));
        let transpose = per_op(iters, || drop(black_box(t.t().unwrap())));
        let narrow = per_op(iters, || drop(black_box(t.narrow(0, 0, 2).unwrap())));
        // ANCHOR_END: views
        println!(
            "candle {} {size}: clone {}/op  t() {}/op  narrow(0, 0, 2) {}/op",
            dev.label(),
            fmt_secs(clone),
            fmt_secs(transpose),
            fmt_secs(narrow),
        );
        let tags = dev.tags().with("size", size).with("iters", iters);
        record("views.clone", clone, "s", &tags);
        record("views.t", transpose, "s", &tags);
        record("views.narrow", narrow, "s", &tags);
    }

    // ANCHOR: copy_view
    let big = Tensor::zeros(1 << 20, DType::F32, &dev.device)?;
    let view = big.narrow(0, 10, 2)?;
    let copied = view.copy()?;
    let (storage, layout) = copied.storage_and_layout();
    // CPU 上 copy() 复制的是整块 storage，不是视图里的 2 个元素
    let held = match &*storage {
        Storage::Cpu(s) => Some(s.as_slice::<f32>()?.len()),
        _ => None,
    };
    // ANCHOR_END: copy_view
    let offset = layout.start_offset();
    drop(storage);
    let copy_time = per_op(10, || drop(black_box(view.copy().unwrap())));
    println!(
        "candle {}: copy() of narrow(0, 10, 2) of a {}-element tensor: dims {:?}, start offset {offset}, storage holds {} f32, {} per copy",
        dev.label(),
        big.elem_count(),
        copied.dims(),
        held.map_or("(not inspected off cpu)".to_string(), |n| n.to_string()),
        fmt_secs(copy_time),
    );
    let tags = dev.tags();
    record("views.copy.view_elems", copied.elem_count(), "", &tags);
    if let Some(n) = held {
        record("views.copy.storage_elems", n, "", &tags);
    }
    record("views.copy.start_offset", offset, "", &tags);
    record("views.copy.time", copy_time, "s", &tags);
    Ok(())
}

// ANCHOR: noop_op
/// 什么也不做的原地算子：只为了走一遍 inplace_op2 的取锁路径。
struct Noop;

impl InplaceOp2 for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn cpu_fwd(&self, _: &mut CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> Result<()> {
        Ok(())
    }
    fn cuda_fwd(&self, _: &mut CudaStorage, _: &Layout, _: &CudaStorage, _: &Layout) -> Result<()> {
        Ok(())
    }
    fn metal_fwd(
        &self,
        _: &mut MetalStorage,
        _: &Layout,
        _: &MetalStorage,
        _: &Layout,
    ) -> Result<()> {
        Ok(())
    }
}
// ANCHOR_END: noop_op

pub fn run_deadlock(dev: &Dev) -> Result<()> {
    let a = Tensor::zeros(4, DType::F32, &dev.device)?;
    let b = Tensor::zeros(4, DType::F32, &dev.device)?;
    // ANCHOR: deadlock
    // 两个不同的张量：先取 a 的写锁，再取 b 的读锁
    println!("a.inplace_op2(&b, &Noop): {:?}", a.inplace_op2(&b, &Noop));
    // 同一个张量：写锁还拿着，又要同一把锁的读锁
    announce(dev, "a.inplace_op2(&a, &Noop) ...");
    let r = a.inplace_op2(&a, &Noop);
    println!("returned: {r:?}");
    // ANCHOR_END: deadlock
    record("deadlock.returned", true, "", &dev.tags());
    Ok(())
}

/// 打印一行并立刻刷出（进程随后会卡住、被杀掉），再记一条「到了这一步」。
fn announce(dev: &Dev, line: &str) {
    println!("{line}");
    std::io::stdout().flush().ok();
    record("deadlock.reached_call", true, "", &dev.tags());
}

pub fn run_varset(dev: &Dev) -> Result<()> {
    let v = Var::new(&[[1f32, 2.], [3., 4.]], &dev.device)?;
    // ANCHOR: varset
    // 新值在新 storage 里：拷进 v 原来的 storage，v 的 id 不变
    let doubled = (v.as_tensor() * 2.0)?;
    let r1 = v.set(&doubled);
    let now = v.to_vec2::<f32>()?;
    println!("v.set(&(v * 2)): {r1:?} -> {now:?}");
    // 转置是视图，和 v 共享 storage：拒绝
    let r = v.set(&v.t()?);
    println!("v.set(&v.t()): {r:?}");
    // 先复制成连续的新张量，就可以
    let r2 = v.set(&v.t()?.contiguous()?);
    let now = v.to_vec2::<f32>()?;
    println!("v.set(&v.t().contiguous()): {r2:?} -> {now:?}");
    // ANCHOR_END: varset
    if let Err(e) = &r {
        record("varset.error", e.to_string(), "", &dev.tags());
    }
    record("varset.contiguous_ok", r2.is_ok(), "", &dev.tags());
    Ok(())
}
