//! Eight element-wise ops in a row: wall time, device time, what breaks fusion, accuracy.

use std::hint::black_box;
use std::time::Instant;

use bookrec::{fmt_duration, measure, record, record_duration, record_stats, Stats};
use burn::tensor::{read_sync, Device, ProfileOptions, Tensor, TensorData, TimingMethod};

use crate::device::tags;
use crate::lazy::rand;

/// One of the chain8 variants below.
type Chain = fn(Tensor<2>) -> Tensor<2>;

// ANCHOR: chain8
fn chain8(x: Tensor<2>) -> Tensor<2> {
    let y = (x * 0.5 + 0.25).sin().abs();
    (y * 0.5 + 0.25).sin().abs()
}
// ANCHOR_END: chain8

// ANCHOR: chain8_dims
fn chain8_dims(x: Tensor<2>) -> Tensor<2> {
    let y = (x * 0.5 + 0.25).sin().abs();
    println!("{:?}", y.dims()); // 只要形状
    (y * 0.5 + 0.25).sin().abs()
}
// ANCHOR_END: chain8_dims

// ANCHOR: chain8_to_data
fn chain8_to_data(x: Tensor<2>) -> Tensor<2> {
    let y = (x * 0.5 + 0.25).sin().abs();
    black_box(y.to_data()); // 要数值：读回主机
    (y * 0.5 + 0.25).sin().abs()
}
// ANCHOR_END: chain8_to_data

/// Device time of `f(x)`, 10 runs after one warm-up run.
///
/// On a backend without a device clock (Flex) `profile_with` measures wall time between
/// two syncs; the returned [`TimingMethod`] says which one it was.
fn device_time(device: &Device, x: &Tensor<2>, f: Chain) -> (Stats, TimingMethod) {
    let mut samples = Vec::new();
    let mut method = TimingMethod::System;
    for run in 0..11 {
        // ANCHOR: profile
        let x = x.clone();
        let options = ProfileOptions::default().flush(); // 窗口关上前先执行排队的 op
        let (y, window) = device.profile_with(options, move || f(x)).unwrap();
        method = window.timing_method(); // Device：设备时钟；System：两次 sync 之间的墙钟
        let ticks = read_sync(window.resolve()).expect("窗口里执行过工作");
        // ANCHOR_END: profile
        drop(y);
        if run > 0 {
            samples.push(ticks.duration());
        }
    }
    (Stats::from_samples(&samples), method)
}

fn print_stats(dev: &str, n: usize, what: &str, s: &Stats) {
    println!(
        "{dev} {n}x{n} {what}, 10 runs: min {} median {}",
        fmt_duration(s.min),
        fmt_duration(s.median)
    );
}

pub fn chain8_mode(dev: &str, device: &Device, n: usize) {
    let tags = tags(dev).with("size", n);
    let x = rand(n, device);
    // x is computed before the clock starts.
    device.sync().unwrap();
    // ANCHOR: first_call
    let t = Instant::now();
    let _ = chain8(x.clone()).into_data(); // 第一次：包括编译内核
    let first = t.elapsed();
    // ANCHOR_END: first_call
    println!(
        "{dev} {n}x{n} chain8 first call (read back): {}",
        fmt_duration(first)
    );
    record_duration("chain8.first_call", first, &tags);

    let wall = measure(1, 10, || {
        let y = chain8(x.clone());
        device.sync().unwrap();
        drop(y);
    });
    print_stats(dev, n, "chain8 wall (sync)", &wall);
    record_stats("chain8.wall", &wall, &tags);

    let (dt, method) = device_time(device, &x, chain8);
    print_stats(dev, n, "chain8 device time (profile_with flush)", &dt);
    record_stats("chain8.device", &dt, &tags.with("timing", method));
    note_timing(dev, method);
}

pub fn chaindims(dev: &str, device: &Device, n: usize) {
    let tags = tags(dev).with("size", n);
    let x = rand(n, device);
    device.sync().unwrap();
    let variants: [(&str, &str, Chain); 3] = [
        ("chain8", "chain8", chain8),
        ("dims", "chain8+dims", chain8_dims),
        ("to_data", "chain8+to_data", chain8_to_data),
    ];
    let mut method = TimingMethod::System;
    for (variant, label, f) in variants {
        let (s, m) = device_time(device, &x, f);
        method = m;
        print_stats(
            dev,
            n,
            &format!("{label} device time (profile_with flush)"),
            &s,
        );
        record_stats(
            "chaindims.device",
            &s,
            &tags.with("variant", variant).with("timing", m),
        );
    }
    note_timing(dev, method);
}

fn note_timing(dev: &str, method: TimingMethod) {
    if method == TimingMethod::System {
        println!("{dev}: no device clock; profile_with measured wall time between two syncs");
    }
}

/// x = 10·sin(k), k = 0..65535, computed in f64 and rounded to f32 (the same input as the
/// Python side builds).
fn deterministic_input() -> Vec<f32> {
    (0..256 * 256)
        .map(|k| (10.0 * (k as f64).sin()) as f32)
        .collect()
}

fn chain8_f64(v: f64) -> f64 {
    let y = (v * 0.5 + 0.25).sin().abs();
    (y * 0.5 + 0.25).sin().abs()
}

pub fn accuracy(dev: &str, device: &Device) {
    let input = deterministic_input();
    let x = Tensor::<2>::from_data(TensorData::new(input.clone(), [256, 256]), device);
    let got = chain8(x).into_data().try_to_vec::<f32>().unwrap();
    let err = input
        .iter()
        .zip(&got)
        .map(|(&v, &g)| (g as f64 - chain8_f64(v as f64)).abs())
        .fold(0.0, f64::max);
    println!(
        "{:<20} max|x - f64 ref| = {}",
        format!("burn {dev}"),
        sci(err)
    );
    record("accuracy.max_abs_err", err, "", &tags(dev));
}

/// `1.247e-07`, as Python's `{:.3e}` writes it (Rust would write `1.247e-7`).
fn sci(v: f64) -> String {
    let s = format!("{v:.3e}");
    let (mant, exp) = s.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
}

#[cfg(test)]
mod tests {
    #[test]
    fn sci_matches_python() {
        assert_eq!(super::sci(1.2474e-7), "1.247e-07");
        assert_eq!(super::sci(0.0), "0.000e+00");
    }
}
