//! decode: one decode step of a small transformer-like model with random f32 weights
//! (shape after SmolLM2-135M: hidden 576, 9 heads of 64, MLP 1536, vocabulary 49152; no RoPE,
//! a fixed K/V cache of `ctx` positions). Variant `fused` uses candle-nn's hand-written kernels
//! (rms_norm, softmax_last_dim); `unfused` builds the same functions from ordinary ops. Each step
//! is timed to a device sync: warm-up steps, then repeats (min / median / max).

use crate::device::Dev;
use crate::softmax::softmax_composite;
use bookrec::{fmt_duration, measure, record, record_stats};
use candle_core::{Device, Result, Tensor};

const HIDDEN: usize = 576;
const HEADS: usize = 9;
const HEAD_DIM: usize = 64;
const MLP: usize = 1536;
const VOCAB: usize = 49152;
const EPS: f32 = 1e-5;
pub const WARMUP: usize = 3;
pub const REPEATS: usize = 20;

struct Layer {
    norm1: Tensor,
    wq: Tensor,
    wo: Tensor,
    k: Tensor,
    v: Tensor,
    norm2: Tensor,
    wg: Tensor,
    wu: Tensor,
    wd: Tensor,
}

fn w(rows: usize, cols: usize, d: &Device) -> Result<Tensor> {
    Tensor::randn(0f32, 0.05, (rows, cols), d)
}

impl Layer {
    fn new(ctx: usize, d: &Device) -> Result<Layer> {
        Ok(Layer {
            norm1: Tensor::ones(HIDDEN, candle_core::DType::F32, d)?,
            wq: w(HIDDEN, HIDDEN, d)?,
            wo: w(HIDDEN, HIDDEN, d)?,
            k: Tensor::randn(0f32, 1.0, (HEADS, ctx, HEAD_DIM), d)?,
            v: Tensor::randn(0f32, 1.0, (HEADS, ctx, HEAD_DIM), d)?,
            norm2: Tensor::ones(HIDDEN, candle_core::DType::F32, d)?,
            wg: w(HIDDEN, MLP, d)?,
            wu: w(HIDDEN, MLP, d)?,
            wd: w(MLP, HIDDEN, d)?,
        })
    }
}

/// The three functions that have a hand-written kernel in candle-nn.
struct Ops {
    rms_norm: fn(&Tensor, &Tensor, f32) -> Result<Tensor>,
    softmax: fn(&Tensor) -> Result<Tensor>,
    silu: fn(&Tensor) -> Result<Tensor>,
}

// ANCHOR: variants
// 融合：candle-nn 里每种设备一个手写内核
const FUSED: Ops = Ops {
    rms_norm: candle_nn::ops::rms_norm,
    softmax: candle_nn::ops::softmax_last_dim,
    silu: candle_nn::ops::silu,
};
// 不融合：同样的函数用普通算子拼出来
const UNFUSED: Ops = Ops {
    rms_norm: candle_nn::ops::rms_norm_slow,
    softmax: softmax_composite,
    silu: silu_composite,
};

fn silu_composite(x: &Tensor) -> Result<Tensor> {
    // x / (1 + e^(-x))
    x / (x.neg()?.exp()? + 1.0)?
}
// ANCHOR_END: variants

// ANCHOR: step
/// 一层：注意力（只有一个新位置，对缓存里的 ctx 个位置）加上门控 MLP
fn layer_step(x: &Tensor, l: &Layer, ops: &Ops) -> Result<Tensor> {
    let h = (ops.rms_norm)(x, &l.norm1, EPS)?;
    let q = h.matmul(&l.wq)?.reshape((HEADS, 1, HEAD_DIM))?;
    let scores = (q.matmul(&l.k.t()?)? / (HEAD_DIM as f64).sqrt())?;
    let att = (ops.softmax)(&scores)?.matmul(&l.v)?.reshape((1, HIDDEN))?;
    let x = (x + att.matmul(&l.wo)?)?;
    let h = (ops.rms_norm)(&x, &l.norm2, EPS)?;
    let gate = (ops.silu)(&h.matmul(&l.wg)?)?;
    let up = h.matmul(&l.wu)?;
    x + (gate * up)?.matmul(&l.wd)?
}
// ANCHOR_END: step

pub fn run(dev: &Dev, variant: &str, layers: usize, ctx: usize) -> Result<()> {
    let ops = match variant {
        "fused" => FUSED,
        "unfused" => UNFUSED,
        other => crate::PROGRAM.usage_error(&format!(
            "decode: unknown variant `{other}` (fused | unfused)"
        )),
    };
    let d = &dev.device;
    let model: Vec<Layer> = (0..layers)
        .map(|_| Layer::new(ctx, d))
        .collect::<Result<_>>()?;
    let final_norm = Tensor::ones(HIDDEN, candle_core::DType::F32, d)?;
    let lm_head = w(HIDDEN, VOCAB, d)?;
    let x0 = Tensor::randn(0f32, 1.0, (1, HIDDEN), d)?;
    let step = || -> Result<Tensor> {
        let mut x = x0.clone();
        for l in &model {
            x = layer_step(&x, l, &ops)?;
        }
        (ops.rms_norm)(&x, &final_norm, EPS)?.matmul(&lm_head)
    };
    dev.sync()?;
    let s = measure(WARMUP, REPEATS, || {
        let logits = step().unwrap();
        dev.sync().unwrap();
        drop(logits);
    });
    println!(
        "candle {} decode step ({variant}, {layers} layers, hidden {HIDDEN}, ctx {ctx}): min {} median {} (of {REPEATS}, after {WARMUP} warm-up)",
        dev.label(),
        fmt_duration(s.min),
        fmt_duration(s.median),
    );
    let tags = dev
        .tags()
        .with("variant", variant)
        .with("size", format!("{layers}x{HIDDEN}x{ctx}"))
        .with("reps", REPEATS);
    record_stats("decode.step", &s, &tags);
    record("decode.layers", layers as f64, "", &tags);
    Ok(())
}
