//! chains：两串逐元素 op，n×n f32。每轮对 5 组输入各算一次、保留结果、同步一次；
//! 第一次计算单独计时（新进程里的第一次，GPU 上包括内核的加载）。

use crate::device::Dev;
use bookrec::modes::chains::{report, INPUTS};
use candle_core::{Result, Tensor};
use std::time::{Duration, Instant};

// ANCHOR: chain8
/// 8 个逐元素 op：每个 op 一次完整的读写。
fn chain8(x: &Tensor) -> Result<Tensor> {
    let y = ((x * 0.5)? + 0.25)?.sin()?.abs()?;
    ((y * 0.5)? + 0.25)?.sin()?.abs()
}
// ANCHOR_END: chain8

// ANCHOR: expr
fn expr(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    (a * b + c)?.exp()
}
// ANCHOR_END: expr

fn random(dev: &Dev, n: usize) -> Result<Tensor> {
    Tensor::rand(-1f32, 1f32, (n, n), &dev.device)
}

pub fn run(dev: &Dev, n: usize, rounds: usize) -> Result<()> {
    // chain8
    let xs: Vec<Tensor> = (0..INPUTS).map(|_| random(dev, n)).collect::<Result<_>>()?;
    let x0 = random(dev, n)?;
    dev.sync()?;
    let t = Instant::now();
    let r = chain8(&x0)?;
    dev.sync()?;
    let first = t.elapsed();
    drop(r);
    // ANCHOR: chain_rounds
    let per_eval = time_rounds(dev, rounds, || xs.iter().map(chain8).collect())?;
    // ANCHOR_END: chain_rounds
    report(&dev.run(), "chain8", n, first, &per_eval);
    drop(xs);

    // expr
    let abc: Vec<[Tensor; 3]> = (0..INPUTS)
        .map(|_| Ok([random(dev, n)?, random(dev, n)?, random(dev, n)?]))
        .collect::<Result<_>>()?;
    let [a0, b0, c0] = [random(dev, n)?, random(dev, n)?, random(dev, n)?];
    dev.sync()?;
    let t = Instant::now();
    let r = expr(&a0, &b0, &c0)?;
    dev.sync()?;
    let first = t.elapsed();
    drop(r);
    let per_eval = time_rounds(dev, rounds, || {
        abc.iter().map(|[a, b, c]| expr(a, b, c)).collect()
    })?;
    report(&dev.run(), "expr", n, first, &per_eval);
    Ok(())
}

/// 每轮：算完这一轮的全部输入、结果留到同步之后；返回每轮折合到一次计算的时间。
fn time_rounds(
    dev: &Dev,
    rounds: usize,
    mut eval: impl FnMut() -> Result<Vec<Tensor>>,
) -> Result<Vec<Duration>> {
    let mut per_eval = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        let results = eval()?;
        dev.sync()?;
        per_eval.push(t.elapsed() / results.len() as u32);
    }
    Ok(per_eval)
}
