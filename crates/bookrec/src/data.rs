//! 训练数据：candle 和 burn 两边的实验用同一个线性同余发生器，逐位相同。

/// 64 位线性同余发生器（Knuth MMIX 的常数），种子固定。
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed)
    }

    /// 下一个数，均匀落在 [-1, 1)：取状态的高 24 位。
    pub fn next_f32(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// n 个样本：输入 x 是 n×4（行优先），目标 y = 0.5·x0 − x1 + 0.25·x2 + 2·x3 + 0.1。
pub fn samples(n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut rng = Lcg::new(42);
    let x: Vec<f32> = (0..n * 4).map(|_| rng.next_f32()).collect();
    let y: Vec<f32> = x
        .chunks(4)
        .map(|r| 0.5 * r[0] - r[1] + 0.25 * r[2] + 2.0 * r[3] + 0.1)
        .collect();
    (x, y)
}
