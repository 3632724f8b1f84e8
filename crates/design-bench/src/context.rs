//! context: candle's own `Context` trait (`candle_core::Context`, modelled on anyhow's) on an
//! `Option` and on a `Result`, once and twice. For each case: the error text and the chain of
//! `Error` variants the value really is, with backtrace capture off or on (RUST_LIB_BACKTRACE).

use crate::device::Dev;
use bookrec::record;
use candle_core::{Context, DType, Error, Result, Tensor};

/// The variants from the outside in, e.g. `WithBacktrace > Msg`.
fn layers(e: &Error) -> String {
    let mut out = Vec::new();
    let mut cur = Some(e);
    while let Some(e) = cur {
        cur = match e {
            Error::WithBacktrace { inner, .. } => {
                out.push("WithBacktrace".to_string());
                Some(inner.as_ref())
            }
            Error::Context { inner, .. } => {
                out.push("Context".to_string());
                Some(inner.as_ref())
            }
            Error::WrappedContext { wrapped, .. } => {
                out.push("WrappedContext".to_string());
                let inner = wrapped.downcast_ref::<Error>();
                if inner.is_none() {
                    out.push("(not a candle Error)".to_string());
                }
                inner
            }
            leaf => {
                // candle's Debug of an Error prints its message, so the leaf variants are named here
                out.push(
                    match leaf {
                        Error::Msg(_) => "Msg",
                        Error::UnwrapNone => "UnwrapNone",
                        Error::ShapeMismatchBinaryOp { .. } => "ShapeMismatchBinaryOp",
                        _ => "(another variant)",
                    }
                    .to_string(),
                );
                None
            }
        };
    }
    out.join(" > ")
}

pub fn run(dev: &Dev) -> Result<()> {
    let d = &dev.device;
    let a = Tensor::zeros((2, 3), DType::F32, d)?;
    let b = Tensor::zeros(3, DType::F32, d)?;
    // ANCHOR: context
    // Option 上的 context：None 变成一个带说明的错误
    let opt_once = None::<usize>.context("no weight named `lm_head`");
    // with_context：说明只在出错时才生成
    let opt_lazy = None::<usize>.with_context(|| "no weight named `lm_head`");
    // Result 上的 context：candle 自己的 Error 被装进 WrappedContext
    let res_once = (&a + &b).context("adding the bias");
    // 再包一层
    let res_twice = (&a + &b).context("adding the bias").context("layer 3");
    // ANCHOR_END: context
    let capture =
        std::backtrace::Backtrace::capture().status() == std::backtrace::BacktraceStatus::Captured;
    println!("candle {}: backtrace captured: {capture}", dev.label());
    let tags = dev.tags().with("backtrace", capture);
    let cases = [
        ("option_context", opt_once.map(|_| ())),
        ("option_with_context", opt_lazy.map(|_| ())),
        ("result_context", res_once.map(|_| ())),
        ("result_context_twice", res_twice.map(|_| ())),
    ];
    for (case, r) in cases {
        let e = match r {
            Ok(()) => {
                println!("{case}: Ok (unexpected)");
                record(&format!("context.{case}.layers"), "Ok", "", &tags);
                continue;
            }
            Err(e) => e,
        };
        let chain = layers(&e);
        println!("--- {case}");
        println!("variants: {chain}");
        record(&format!("context.{case}.layers"), chain.as_str(), "", &tags);
        record(
            &format!("context.{case}.depth"),
            chain.split(" > ").count() as f64,
            "",
            &tags,
        );
        if capture {
            // the text now carries one backtrace per WithBacktrace layer: only its size is stable
            let text = e.to_string();
            println!(
                "Display: {} lines (the backtraces included)",
                text.lines().count()
            );
        } else {
            let text = e.to_string();
            println!("Display:");
            for line in text.lines() {
                println!("  | {line}");
            }
            record(&format!("context.{case}.text"), text.as_str(), "", &tags);
        }
    }
    Ok(())
}
