//! When does the work happen: `ret` (does the call return before the work is done) and
//! `drop` (is a result nobody reads computed at all).

use std::time::{Duration, Instant};

use bookrec::{fmt_duration, measure, record_duration, record_stats, Stats};
use burn::tensor::{Device, Distribution, Tensor};

use crate::device::tags;

pub fn rand(n: usize, device: &Device) -> Tensor<2> {
    Tensor::random([n, n], Distribution::Default, device)
}

pub fn ret(dev: &str, device: &Device, n: usize) {
    let mut runs: Vec<(Duration, Duration)> = Vec::new();
    // ANCHOR: ret
    let a = rand(n, device);
    for _ in 0..3 {
        let _ = a.clone().exp().into_data(); // 前几次调用（编译内核、预热）放到计时之外
    }
    device.sync().unwrap();
    for i in 0..5 {
        let t = Instant::now();
        let y = a.clone().exp();
        let returned = t.elapsed(); // 调用返回
        device.sync().unwrap();
        let synced = t.elapsed(); // 同步之后
        drop(y);
        println!(
            "{dev} {n}x{n} exp run {i}: returned after {}, after sync {}",
            fmt_duration(returned),
            fmt_duration(synced)
        );
        runs.push((returned, synced));
    }
    // ANCHOR_END: ret
    let tags = tags(dev).with("size", n);
    for (i, (r, s)) in runs.iter().enumerate() {
        record_duration("ret.returned", *r, &tags.with("run", i));
        record_duration("ret.synced", *s, &tags.with("run", i));
    }
    let returned: Vec<Duration> = runs.iter().map(|r| r.0).collect();
    let synced: Vec<Duration> = runs.iter().map(|r| r.1).collect();
    let (r, s) = (Stats::from_samples(&returned), Stats::from_samples(&synced));
    record_stats("ret.returned", &r, &tags);
    record_stats("ret.synced", &s, &tags);
}

pub fn drop_results(dev: &str, device: &Device, n: usize, reps: u32) {
    let (a, b, c) = (rand(n, device), rand(n, device), rand(n, device));
    let expr = || (a.clone() * b.clone() + c.clone()).exp();
    let kept = || {
        let y = expr();
        device.sync().unwrap();
        drop(y);
    };
    kept(); // 预热
    let tags = tags(dev).with("size", n).with("reps", reps);
    for round in 0..3 {
        // ANCHOR: drop
        let t = Instant::now();
        for _ in 0..reps {
            let _ = expr(); // 语句结束时结果就被丢掉
        }
        device.sync().unwrap();
        let dropped = t.elapsed() / reps;
        // ANCHOR_END: drop
        let k = measure(0, reps as usize, &kept);
        println!(
            "{dev} {n}x{n} (a*b+c).exp() round {round}: dropped {} per eval; \
             kept+sync each min {} median {}",
            fmt_duration(dropped),
            fmt_duration(k.min),
            fmt_duration(k.median)
        );
        let tags = tags.with("round", round);
        record_duration("drop.dropped_per_eval", dropped, &tags);
        record_stats("drop.kept", &k, &tags);
    }
}
