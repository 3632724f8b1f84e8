//! errcost: the price of an `Err` with and without backtrace capture (RUST_LIB_BACKTRACE /
//! RUST_BACKTRACE decide), and whether matching on its variant still works.
//! panics: the calls the volume reports as panicking instead of returning `Err`, each one run
//! under catch_unwind on the given device; what each really does is recorded.

use crate::device::Dev;
use bookrec::{fmt_secs, measure, record};
use candle_core::{DType, Error, Result, Tensor};
use std::hint::black_box;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub fn run_errcost(dev: &Dev, iters: usize) -> Result<()> {
    let d = &dev.device;
    let a = Tensor::zeros((2, 3), DType::F32, d)?;
    let b = Tensor::zeros(3, DType::F32, d)?;
    let ok = Tensor::zeros(3, DType::F32, d)?;
    // ANCHOR: errcost
    // 环境变量决定 Error::bt() 抓不抓调用栈
    let capture =
        std::backtrace::Backtrace::capture().status() == std::backtrace::BacktraceStatus::Captured;
    let per_err = per_op(iters, || drop(black_box(&a + &b)));
    let per_ok = per_op(iters, || drop(black_box(&ok + &ok)));
    // 抓了调用栈的错误被包进 WithBacktrace，按变体 match 就对不上了
    let err = (&a + &b).unwrap_err();
    let matches = matches!(err, Error::ShapeMismatchBinaryOp { .. });
    // ANCHOR_END: errcost
    println!(
        "candle {}: backtrace captured: {capture}; Err from add [2, 3] + [3]: {}/call; Ok add [3] + [3]: {}/call; \
         `matches!(e, Error::ShapeMismatchBinaryOp {{ .. }})`: {matches}",
        dev.label(),
        fmt_secs(per_err),
        fmt_secs(per_ok),
    );
    let tags = dev.tags().with("backtrace", capture).with("iters", iters);
    record("errcost.per_err", per_err, "s", &tags);
    record("errcost.per_ok", per_ok, "s", &tags);
    record("errcost.variant_matches", matches, "", &tags);
    Ok(())
}

fn per_op(iters: usize, mut f: impl FnMut()) -> f64 {
    let s = measure(1, 5, || {
        for _ in 0..iters {
            f();
        }
    });
    s.median.as_secs_f64() / iters as f64
}

/// One reported panic: its name and the call that is said to panic.
type Case = (&'static str, Box<dyn Fn() -> Result<String>>);

pub fn run_panics(dev: &Dev) -> Result<()> {
    let d = dev.device.clone();
    // a panic's message is recorded below; the default hook would print it a second time
    std::panic::set_hook(Box::new(|_| {}));
    #[allow(unused_mut)] // the Metal case is added on macOS only
    let mut cases: Vec<Case> = vec![
        (
            "int_unary",
            Box::new({
                let d = d.clone();
                // ANCHOR: int_unary
                // 整数张量的一元运算
                move || {
                    Ok(format!(
                        "{:?}",
                        Tensor::new(&[1u32, 2, 3], &d)?.exp()?.to_vec1::<u32>()?
                    ))
                }
                // ANCHOR_END: int_unary
            }),
        ),
        (
            "rank9",
            Box::new({
                let d = d.clone();
                // ANCHOR: rank9
                // 9 维、步长不能合并的两个张量相加（每一维都从 3 截成 2）
                move || {
                    let mut t = Tensor::zeros(vec![3usize; 9], DType::F32, &d)?;
                    for dim in 0..9 {
                        t = t.narrow(dim, 0, 2)?;
                    }
                    Ok(format!("{:?}", (&t + &t)?.dims()))
                }
                // ANCHOR_END: rank9
            }),
        ),
        (
            "from_vec_count",
            Box::new({
                let d = d.clone();
                // ANCHOR: from_vec_count
                // 5 个元素，形状却是 (2, 3)
                move || {
                    Ok(format!(
                        "{:?}",
                        Tensor::from_vec(vec![1f32; 5], (2, 3), &d)?.to_vec2::<f32>()?
                    ))
                }
                // ANCHOR_END: from_vec_count
            }),
        ),
    ];
    // Only a build with Metal (macOS) tests what the case is about; elsewhere new_metal is a stub
    // that returns Err whatever the ordinal, so the case is not run there.
    #[cfg(target_os = "macos")]
    cases.push((
        "metal_ordinal",
        Box::new(|| {
            // ANCHOR: metal_ordinal
            // 第二块 Metal GPU（这台机器上可能没有）
            Ok(format!(
                "{:?}",
                candle_core::Device::new_metal(1)?.location()
            ))
            // ANCHOR_END: metal_ordinal
        }),
    ));
    let tags = dev.tags();
    for (case, f) in cases {
        let outcome = match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(v)) => format!("Ok: {v}"),
            Ok(Err(e)) => format!("Err: {}", e.to_string().lines().next().unwrap_or("")),
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_string());
                format!("panic: {msg}")
            }
        };
        println!("{case:<15} {outcome}");
        let kind = outcome.split(':').next().unwrap_or("");
        record(&format!("panics.{case}"), kind, "", &tags);
        record(
            &format!("panics.{case}.detail"),
            outcome.as_str(),
            "",
            &tags,
        );
    }
    let _ = std::panic::take_hook();
    Ok(())
}
