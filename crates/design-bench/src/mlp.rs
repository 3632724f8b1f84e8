//! mlp：4 → 16 → 1 的 MLP，ReLU，MSE，AdamW（weight_decay = 0，即 Adam），学习率 1e-2，
//! 64 个样本。第一步单独计时，20 步预热，再各 200 步「读回」和「不读回」。
//! phases：同一个训练步按阶段拆开，量 CPU 一侧的时间。

use crate::device::Dev;
use bookrec::data;
use bookrec::modes::mlp::{report, LR, SAMPLES, STEPS, WARMUP};
use bookrec::{fmt_duration, record_duration, Stats};
use candle_core::{DType, Result, Tensor};
use candle_nn::{linear, loss, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use std::time::{Duration, Instant};

// ANCHOR: mlp_model
struct Mlp {
    l1: Linear,
    l2: Linear,
}

impl Mlp {
    fn new(vb: VarBuilder) -> Result<Mlp> {
        Ok(Mlp {
            l1: linear(4, 16, vb.pp("l1"))?,
            l2: linear(16, 1, vb.pp("l2"))?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.l2.forward(&self.l1.forward(x)?.relu()?)
    }
}
// ANCHOR_END: mlp_model

// ANCHOR: mlp_step
type Optim = AdamW;

/// 一个训练步；read 为真时把 loss 读回 CPU（这会等设备算完）。
fn step(model: &Mlp, opt: &mut Optim, x: &Tensor, y: &Tensor, read: bool) -> Result<f32> {
    let loss = loss::mse(&model.forward(x)?, y)?;
    let grads = loss.backward()?;
    opt.step(&grads)?;
    Ok(if read { loss.to_scalar()? } else { f32::NAN })
}
// ANCHOR_END: mlp_step

/// 数据、模型、优化器：两种模式共用。
fn setup(dev: &Dev) -> Result<(Mlp, Optim, Tensor, Tensor)> {
    let (xs, ys) = data::samples(SAMPLES);
    let x = Tensor::from_vec(xs, (SAMPLES, 4), &dev.device)?;
    let y = Tensor::from_vec(ys, (SAMPLES, 1), &dev.device)?;
    let varmap = VarMap::new();
    let model = Mlp::new(VarBuilder::from_varmap(&varmap, DType::F32, &dev.device))?;
    let params = ParamsAdamW {
        lr: LR,
        weight_decay: 0.0,
        ..Default::default()
    };
    let opt = AdamW::new(varmap.all_vars(), params)?;
    Ok((model, opt, x, y))
}

/// 新建模型后的前两个训练步（都读回 loss），各自的时间：给 firstuse 用。
pub fn first_steps(dev: &Dev) -> Result<[Duration; 2]> {
    let (model, mut opt, x, y) = setup(dev)?;
    let mut times = [Duration::ZERO; 2];
    for t in times.iter_mut() {
        let start = Instant::now();
        step(&model, &mut opt, &x, &y, true)?;
        *t = start.elapsed();
    }
    Ok(times)
}

pub fn run(dev: &Dev) -> Result<()> {
    let (model, mut opt, x, y) = setup(dev)?;
    // ANCHOR: mlp_timing
    let t = Instant::now();
    step(&model, &mut opt, &x, &y, true)?;
    let first = t.elapsed();
    for _ in 0..WARMUP {
        step(&model, &mut opt, &x, &y, false)?;
    }
    dev.sync()?;
    // 读回：逐步计时
    let mut times = Vec::with_capacity(STEPS);
    let mut last_loss = f32::NAN;
    for _ in 0..STEPS {
        let t = Instant::now();
        last_loss = step(&model, &mut opt, &x, &y, true)?;
        times.push(t.elapsed());
    }
    // 不读回：整个循环只在最后同步一次
    let t = Instant::now();
    for _ in 0..STEPS {
        step(&model, &mut opt, &x, &y, false)?;
    }
    let loop_time = t.elapsed();
    dev.sync()?;
    let total = t.elapsed();
    // ANCHOR_END: mlp_timing
    let read = Stats::from_samples(&times);
    report(&dev.run(), first, &read, loop_time, total, last_loss);
    Ok(())
}

pub fn run_phases(dev: &Dev) -> Result<()> {
    let (model, mut opt, x, y) = setup(dev)?;
    for _ in 0..WARMUP {
        step(&model, &mut opt, &x, &y, false)?;
    }
    dev.sync()?;
    let mut sum = [Duration::ZERO; 3];
    for _ in 0..STEPS {
        // ANCHOR: phases
        let t0 = Instant::now();
        let loss = loss::mse(&model.forward(&x)?, &y)?;
        let t1 = Instant::now();
        let grads = loss.backward()?;
        let t2 = Instant::now();
        opt.step(&grads)?;
        let t3 = Instant::now();
        // ANCHOR_END: phases
        sum[0] += t1 - t0;
        sum[1] += t2 - t1;
        sum[2] += t3 - t2;
    }
    dev.sync()?;
    let [fwd, bwd, opt_step] = sum.map(|s| s / STEPS as u32);
    println!(
        "candle phases {}: forward+loss {}, backward {}, AdamW step {} (CPU time per step, {STEPS} steps)",
        dev.label(),
        fmt_duration(fwd),
        fmt_duration(bwd),
        fmt_duration(opt_step),
    );
    let tags = dev.tags().with("steps", STEPS);
    record_duration("phases.forward_loss", fwd, &tags);
    record_duration("phases.backward", bwd, &tags);
    record_duration("phases.optimizer", opt_step, &tags);
    Ok(())
}
