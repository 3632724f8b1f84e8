//! mlp：4 → 16 → 1 的 MLP，ReLU，MSE，Adam，学习率 1e-2，64 个样本。
//! 第一步单独计时，20 步预热，再各 200 步「读回」和「不读回」。

use crate::device::Dev;
use bookrec::data;
use bookrec::modes::mlp::{report, LR, SAMPLES, STEPS, WARMUP};
use bookrec::Stats;
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::prelude::*;
use burn::tensor::activation::relu;
use std::time::Instant;

// ANCHOR: mlp_model
#[derive(Module, Debug)]
struct Mlp {
    l1: Linear,
    l2: Linear,
}

impl Mlp {
    fn new(device: &Device) -> Mlp {
        Mlp {
            l1: LinearConfig::new(4, 16).init(device),
            l2: LinearConfig::new(16, 1).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.l2.forward(relu(self.l1.forward(x)))
    }
}
// ANCHOR_END: mlp_model

// ANCHOR: mlp_step
type Optim = ModuleOptimizer;

/// 一个训练步；read 为真时把 loss 读回 CPU（这会等设备算完）。
fn step(model: Mlp, opt: &mut Optim, x: &Tensor<2>, y: &Tensor<2>, read: bool) -> (Mlp, f32) {
    let loss = MseLoss::new().forward(model.forward(x.clone()), y.clone(), Reduction::Mean);
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    let model = opt.step(LR, model, grads);
    (model, if read { loss.into_scalar() } else { f32::NAN })
}
// ANCHOR_END: mlp_step

/// 数据、模型、优化器。epsilon 取 1e-8，和 candle 的 AdamW 默认值一样（burn 默认 1e-5）。
fn setup(dev: &Dev) -> (Mlp, Optim, Tensor<2>, Tensor<2>) {
    let device = dev.device.clone().autodiff();
    let (xs, ys) = data::samples(SAMPLES);
    let x = Tensor::<2>::from_data(TensorData::new(xs, [SAMPLES, 4]), &device);
    let y = Tensor::<2>::from_data(TensorData::new(ys, [SAMPLES, 1]), &device);
    let model = Mlp::new(&device);
    let opt = AdamConfig::new().with_epsilon(1e-8).init();
    (model, opt, x, y)
}

pub fn run(dev: &Dev) {
    let (mut model, mut opt, x, y) = setup(dev);
    // ANCHOR: mlp_timing
    let t = Instant::now();
    (model, _) = step(model, &mut opt, &x, &y, true);
    let first = t.elapsed();
    for _ in 0..WARMUP {
        (model, _) = step(model, &mut opt, &x, &y, false);
    }
    dev.sync();
    // 读回：逐步计时
    let mut times = Vec::with_capacity(STEPS);
    let mut last_loss = f32::NAN;
    for _ in 0..STEPS {
        let t = Instant::now();
        (model, last_loss) = step(model, &mut opt, &x, &y, true);
        times.push(t.elapsed());
    }
    // 不读回：整个循环只在最后同步一次
    let t = Instant::now();
    for _ in 0..STEPS {
        (model, _) = step(model, &mut opt, &x, &y, false);
    }
    let loop_time = t.elapsed();
    dev.sync();
    let total = t.elapsed();
    // ANCHOR_END: mlp_timing
    drop(model);
    let read = Stats::from_samples(&times);
    report(&dev.run(), first, &read, loop_time, total, last_loss);
}
