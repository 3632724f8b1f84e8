//! Where does an error show up: a shape error, an allocation too big for the device, an
//! out-of-bounds index.
//!
//! A panic at the call is caught (to print and record it) and then resumed, so the process
//! still ends the way an uncaught panic does: exit status 101.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::process::Command;

use bookrec::{record, Tags};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::device::tags;

/// Catches a panic at one call: prints it, records where (`name` = `value`) and the panic's
/// message (`message`), then lets the panic go on.
struct AtCall<'a> {
    name: &'a str,
    value: &'a str,
    message: &'a str,
    tags: &'a Tags,
}

impl AtCall<'_> {
    fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(v) => v,
            Err(payload) => {
                println!("--- returned to caller: panicked");
                record(self.name, self.value, "", self.tags);
                let text = payload
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| payload.downcast_ref::<&str>().copied())
                    .unwrap_or("");
                record(
                    self.message,
                    format!("panic: {}", text.trim()),
                    "",
                    self.tags,
                );
                resume_unwind(payload)
            }
        }
    }
}

/// An error's text, cut after a dozen lines: cubecl appends a backtrace to some of its
/// errors when `RUST_BACKTRACE` is set.
fn head(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 12 {
        return text;
    }
    format!(
        "{}\n... ({} more lines)",
        lines[..12].join("\n"),
        lines.len() - 12
    )
}

fn floats(d: TensorData) -> Vec<f32> {
    d.try_to_vec::<f32>().unwrap()
}

pub fn shape(dev: &str, device: &Device) {
    let tags = tags(dev);
    let (name, message) = ("errors.shape.where", "errors.shape.message");
    let panics = AtCall {
        name,
        value: "call",
        message,
        tags: &tags,
    };
    // ANCHOR: shape
    let a = Tensor::<2>::ones([2, 3], device);
    let b = Tensor::<2>::ones([2, 3], device);
    println!("--- {dev}: a.matmul(b) with [2, 3] x [2, 3]");
    // 下面这一行 panic 的话，记为「在调用处」
    let c = panics.run(|| a.matmul(b));
    // ANCHOR_END: shape

    // Not reached on any backend seen so far: the shape check runs before any backend.
    let read = c.try_to_data().map(|d| d.shape().clone());
    println!("--- returned; c.try_to_data(): {read:?}");
    let outcome = if read.is_ok() { "none" } else { "read" };
    record("errors.shape.where", outcome, "", &tags);
}

pub fn huge(dev: &str, device: &Device) {
    let tags = tags(dev);
    println!("--- {dev}: Tensor::<2>::zeros([1 << 18, 1 << 18], &device) + 1.0");
    if dev != "flex" {
        return huge_in_process(device, &tags);
    }
    // On the CPU a refused allocation aborts a Rust process (no unwinding), and an allocation
    // the OS grants lazily would page in 256 GiB: run it only where the OS refuses it at once,
    // and in a child process, so that this one can say what happened.
    if let Some(why_not) = os_would_overcommit(1 << 38) {
        println!("--- skipped: {why_not}; the allocation would not fail at once here");
        record("errors.huge.where", "skipped", "", &tags);
        return;
    }
    println!("--- in a child process (an allocation failure aborts the process):");
    let exe = std::env::current_exe().expect("path of this program");
    let child = Command::new(exe)
        .args(["huge-child", dev])
        .output()
        .expect("start the child");
    let stderr = String::from_utf8_lossy(&child.stderr);
    print!("{}", String::from_utf8_lossy(&child.stdout));
    for line in stderr
        .lines()
        .filter(|l| !l.starts_with("note: run with `RUST_BACKTRACE"))
    {
        println!("{line}");
    }
    let status = describe(&child.status);
    println!("--- child process: {status}");
    let aborted = !child.status.success() && !stderr.contains("panicked");
    let where_ = if aborted {
        "call (process aborted)"
    } else {
        "call (panicked)"
    };
    record(
        "errors.huge.where",
        if child.status.success() {
            "none"
        } else {
            where_
        },
        "",
        &tags,
    );
    record(
        "errors.huge.message",
        stderr.lines().next().unwrap_or(""),
        "",
        &tags,
    );
    record("errors.huge.child_status", status, "", &tags);
}

/// The `huge-child` mode: the allocation itself, with nothing else to say.
pub fn huge_child(device: &Device) {
    let huge = Tensor::<2>::zeros([1 << 18, 1 << 18], device) + 1.0;
    println!("--- huge created, dims {:?}", huge.dims());
}

fn describe(status: &std::process::ExitStatus) -> String {
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(status) {
        let name = if sig == 6 { " (SIGABRT)" } else { "" };
        return format!("killed by signal {sig}{name}");
    }
    match status.code() {
        Some(c) => format!("exit status {c}"),
        None => "no exit status".into(),
    }
}

/// Why the OS would grant a CPU allocation of `bytes` (more than RAM + swap) without failing
/// at once, or `None` when it refuses it at the call (Linux overcommit modes 0 and 2).
fn os_would_overcommit(bytes: u64) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some(format!(
            "{} overcommits virtual memory",
            std::env::consts::OS
        ));
    }
    let mode = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
    if mode.trim() == "1" {
        return Some("vm.overcommit_memory = 1 (always overcommit)".into());
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = |key: &str| -> u64 {
        let line = meminfo.lines().find(|l| l.starts_with(key)).unwrap_or("");
        line.split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let total = (kib("MemTotal:") + kib("SwapTotal:")) * 1024;
    (bytes <= total).then(|| "RAM + swap are larger than the allocation".into())
}

fn huge_in_process(device: &Device, tags: &Tags) {
    // ANCHOR: huge
    let huge = Tensor::<2>::zeros([1 << 18, 1 << 18], device) + 1.0;
    println!("--- huge registered, dims {:?}", huge.dims());
    let small = Tensor::<1>::from_floats([1.0, 2.0], device) * 2.0;
    let small_read = small.try_to_data().map(floats);
    println!("--- small.try_to_data(): {small_read:?}");
    let synced = device.sync();
    println!("--- device.sync(): {synced:?}");
    let huge_read = huge.slice([0..1, 0..2]).try_to_data().map(floats);
    match &huge_read {
        Ok(v) => println!("--- huge read: Ok {v:?}"),
        Err(e) => println!("--- huge read: Err: {}", head(e)),
    }
    // ANCHOR_END: huge
    let ok = |b: bool| if b { "Ok" } else { "Err" };
    record("errors.huge.small_read", ok(small_read.is_ok()), "", tags);
    record("errors.huge.sync", ok(synced.is_ok()), "", tags);
    record("errors.huge.read", ok(huge_read.is_ok()), "", tags);
    if let Err(e) = &huge_read {
        record("errors.huge.message", head(e), "", tags);
    }
    let where_ = if small_read.is_err() {
        "read of another tensor"
    } else if synced.is_err() {
        "sync"
    } else if huge_read.is_err() {
        "read of huge"
    } else {
        "none"
    };
    record("errors.huge.where", where_, "", tags);
}

pub fn oob(dev: &str, device: &Device) {
    let tags = tags(dev);
    let (name, message) = ("oob.outcome", "oob.message");
    let panics = AtCall {
        name,
        value: "raised at call",
        message,
        tags: &tags,
    };
    // ANCHOR: oob
    let x = Tensor::<1>::from_floats([1.0, 2.0, 3.0], device);
    let i = Tensor::<1, Int>::from_ints([5], device);
    println!("--- {dev}: y = x.select(0, [5])"); // 下标 5 越界
    let y = panics.run(|| x.clone().select(0, i)); // panic 的话记为「在调用处」
    println!("--- returned");
    let z = x * 2.0; // 和 y 无关的另一个张量
    let z_read = z.try_to_data().map(floats);
    println!("--- z.try_to_data(): {z_read:?}");
    let synced = device.sync();
    println!("--- device.sync(): {synced:?}");
    let y_read = y.try_to_data().map(floats);
    match &y_read {
        Ok(v) => println!("--- y.try_to_data(): Ok {v:?}"),
        Err(e) => println!("--- y.try_to_data(): Err: {}", head(e)),
    }
    // ANCHOR_END: oob
    let outcome = match (&z_read, &synced, &y_read) {
        (Err(_), _, _) => "raised at read of another tensor".to_string(),
        (_, Err(_), _) => "raised at next sync".to_string(),
        (_, _, Err(_)) => "raised at read of y".to_string(),
        (_, _, Ok(v)) => format!("silent: read {}", v[0]),
    };
    record("oob.outcome", outcome, "", &tags);
}
