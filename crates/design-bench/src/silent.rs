//! silent: the volume's "silent miscomputations" that are not Metal-only by construction, each one
//! run on the given device and checked against a reference computed another way.
//!
//! Every check records `silent.<item>` = "silent" (a wrong or missing result, no error),
//! "correct" (the result matches the reference) or "error" (an Err instead), plus a detail line.

use crate::device::Dev;
use bookrec::record;
use candle_core::{DType, Device, Module, Result, Tensor, Var};
use candle_nn::kv_cache::KvCache;
use candle_nn::{RmsNorm, VarBuilder};
use std::collections::HashMap;

struct Verdict {
    item: &'static str,
    outcome: &'static str,
    detail: String,
}

fn verdict(item: &'static str, silent: bool, detail: String) -> Verdict {
    let outcome = if silent { "silent" } else { "correct" };
    Verdict {
        item,
        outcome,
        detail,
    }
}

type Check = fn(&Device) -> Result<Verdict>;

pub fn run(dev: &Dev) -> Result<()> {
    let d = &dev.device;
    let checks: [(&'static str, Check); 6] = [
        ("copy_shares", copy_shares),
        ("seed", seed),
        ("fused_no_grad", fused_no_grad),
        ("forward_diff_doc", forward_diff_doc),
        ("varbuilder_dtype", varbuilder_dtype),
        ("kvcache_clone", kvcache_clone),
    ];
    let tags = dev.tags();
    for (item, check) in checks {
        let v = check(d).unwrap_or_else(|e| Verdict {
            item,
            outcome: "error",
            detail: first_line(&e.to_string()),
        });
        println!("{:<18} {:<8} {}", v.item, v.outcome, v.detail);
        record(&format!("silent.{}", v.item), v.outcome, "", &tags);
        record(
            &format!("silent.{}.detail", v.item),
            v.detail.as_str(),
            "",
            &tags,
        );
    }
    Ok(())
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

// ANCHOR: copy_shares
/// copy() 之后写副本，原张量不应该变。
fn copy_shares(d: &Device) -> Result<Verdict> {
    let a = Tensor::zeros(4, DType::F32, d)?;
    let b = a.copy()?;
    b.slice_set(&Tensor::ones(4, DType::F32, d)?, 0, 0)?;
    let a_sum = a.sum_all()?.to_scalar::<f32>()?;
    Ok(verdict(
        "copy_shares",
        a_sum != 0.0,
        format!("after writing ones into the copy, sum(original) = {a_sum}"),
    ))
}
// ANCHOR_END: copy_shares

// ANCHOR: seed
/// 同一个种子应该给出同样的随机数，不同的种子应该不同。
fn seed(d: &Device) -> Result<Verdict> {
    let draw = |s: u64| -> Result<Vec<f32>> {
        d.set_seed(s)?;
        Tensor::randn(0f32, 1f32, 8, d)?.to_vec1::<f32>()
    };
    let (a, b, c) = (draw(7)?, draw(7)?, draw(8)?);
    Ok(verdict(
        "seed",
        a != b || a == c,
        format!(
            "seed 7 twice equal: {}, seed 7 vs 8 equal: {}",
            a == b,
            a == c
        ),
    ))
}
// ANCHOR_END: seed

// ANCHOR: fused_no_grad
/// RmsNorm::forward 在连续输入上走融合算子：输入和权重都应该有梯度。
fn fused_no_grad(d: &Device) -> Result<Verdict> {
    let x = Var::from_tensor(&Tensor::arange(0f32, 8f32, d)?.reshape((2, 4))?)?;
    let w = Var::from_tensor(&Tensor::ones(4, DType::F32, d)?)?;
    let norm = RmsNorm::new(w.as_tensor().clone(), 1e-5);
    let grads = norm.forward(x.as_tensor())?.sum_all()?.backward()?;
    let (gx, gw) = (
        grads.get(x.as_tensor()).is_some(),
        grads.get(w.as_tensor()).is_some(),
    );
    Ok(verdict(
        "fused_no_grad",
        !(gx && gw),
        format!("gradient of x present: {gx}, of the weight: {gw}"),
    ))
}
// ANCHOR_END: fused_no_grad

// ANCHOR: forward_diff_doc
/// 文档说 forward_diff 是「更快、只能用于连续张量」的版本；量一下它是不是。
fn forward_diff_doc(d: &Device) -> Result<Verdict> {
    let w = Var::from_tensor(&Tensor::ones(64, DType::F32, d)?)?;
    let norm = RmsNorm::new(w.as_tensor().clone(), 1e-5);
    // 非连续的输入（转置）：文档说不能用
    let x = Tensor::randn(0f32, 1f32, (64, 64), d)?.t()?;
    let non_contiguous_ok = norm.forward_diff(&x).is_ok();
    let xc = x.contiguous()?;
    let grads = norm.forward_diff(&xc)?.sum_all()?.backward()?;
    let has_grad = grads.get(w.as_tensor()).is_some();
    // 文档写的是另一个方法：forward_diff 接受非连续输入、有梯度，也就是那条慢的可求导路径
    Ok(verdict(
        "forward_diff_doc",
        non_contiguous_ok && has_grad,
        format!(
            "accepts a non-contiguous input: {non_contiguous_ok}, gives a gradient: {has_grad}"
        ),
    ))
}
// ANCHOR_END: forward_diff_doc

// ANCHOR: varbuilder_dtype
/// to_dtype(F16) 之后，两种取法都应该给 F16。
fn varbuilder_dtype(d: &Device) -> Result<Verdict> {
    let ts = HashMap::from([("w".to_string(), Tensor::zeros(4, DType::F32, d)?)]);
    let vb = VarBuilder::from_tensors(ts, DType::F32, d).to_dtype(DType::F16);
    let by_get = vb.get(4, "w")?.dtype();
    let unchecked = vb.get_unchecked("w")?.dtype();
    Ok(verdict(
        "varbuilder_dtype",
        by_get != unchecked,
        format!(
            "vb.dtype() = {:?}, get() = {by_get:?}, get_unchecked() = {unchecked:?}",
            vb.dtype()
        ),
    ))
}
// ANCHOR_END: varbuilder_dtype

// ANCHOR: kvcache_clone
/// 克隆的 KvCache 应该是独立的：原件再追加，不该改到克隆里已有的数据。
fn kvcache_clone(d: &Device) -> Result<Verdict> {
    let row = |v: f32| Tensor::full(v, (1, 1, 2), d);
    let mut original = KvCache::new(1, 4);
    original.append(&row(1.0)?, &row(1.0)?)?;
    let mut cloned = original.clone();
    cloned.append(&row(2.0)?, &row(2.0)?)?; // 克隆的第 2 个位置写 2
    original.append(&row(3.0)?, &row(3.0)?)?; // 原件的第 2 个位置写 3
    let seen = cloned
        .k()?
        .expect("two rows")
        .narrow(1, 1, 1)?
        .flatten_all()?
        .to_vec1::<f32>()?[0];
    Ok(verdict(
        "kvcache_clone",
        seen != 2.0,
        format!("the clone's second row reads {seen} (it wrote 2)"),
    ))
}
// ANCHOR_END: kvcache_clone
