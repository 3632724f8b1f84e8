"""eager 和延迟执行：PyTorch 一侧的实验。

    python exec_gpu.py MODE DEVICE [N] [REPS]

MODE: ret | drop | chain8 | accuracy | errors
DEVICE: cpu | cuda | mps (one code path: torch.accelerator; device time as bookrec.device_time picks)
N: side of the square f32 tensors (default 4096)
REPS: evaluations per round in `drop` (default 20)

Every number a page may cite is also written as a record (see bookrec.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

# torch.compile must start cold: a fresh, empty inductor cache for this process.
# Set before torch is imported so inductor (and Triton under it) never see another one.
_CACHE_DIR = tempfile.mkdtemp(prefix="exec-gpu-inductor-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = _CACHE_DIR

import torch  # noqa: E402

from bookrec import (  # noqa: E402
    TIMING_LABELS, Stats, device_time, fmt_duration, measure, record, record_stats, require_device, sync,
)

FW = "torch"


def rand(n: int, dev: str) -> torch.Tensor:
    return torch.rand(n, n, device=dev)


# ---------------------------------------------------------------- ret


# ANCHOR: ret
def ret(dev: str, n: int) -> tuple[list[float], list[float]]:
    a = rand(n, dev)
    for _ in range(3):  # 前几次调用（加载内核、分配器和时钟的预热）放到计时之外
        a.exp().cpu()
    sync(dev)
    returned, synced = [], []
    for i in range(5):
        t = time.perf_counter()
        y = a.exp()
        returned.append(time.perf_counter() - t)  # 调用返回
        sync(dev)  # torch.accelerator.synchronize()；CPU 上不用等
        synced.append(time.perf_counter() - t)  # 同步之后
        del y
        print(
            f"{dev} {n}x{n} exp run {i}: returned after {fmt_duration(returned[i])},"
            f" after sync {fmt_duration(synced[i])}"
        )
    return returned, synced
# ANCHOR_END: ret


def run_ret(dev: str, n: int) -> None:
    returned, synced = ret(dev, n)
    tags = dict(framework=FW, device=dev, size=n)
    for i, (r, s) in enumerate(zip(returned, synced)):
        record("ret.returned", r, "s", run=i, **tags)
        record("ret.synced", s, "s", run=i, **tags)
    r, s = Stats.from_samples(returned), Stats.from_samples(synced)
    record_stats("ret.returned", r, **tags)
    record_stats("ret.synced", s, **tags)


# ---------------------------------------------------------------- drop


def run_drop(dev: str, n: int, reps: int = 20, rounds: int = 3) -> None:
    a, b, c = rand(n, dev), rand(n, dev), rand(n, dev)

    def expr() -> torch.Tensor:
        return (a * b + c).exp()

    def kept() -> None:
        y = expr()
        sync(dev)
        del y

    kept()  # warm-up
    tags = dict(framework=FW, device=dev, size=n, reps=reps)
    for r in range(rounds):
        # ANCHOR: drop
        t = time.perf_counter()
        for _ in range(reps):
            expr()  # 结果没人要，当场丢掉
        sync(dev)
        dropped = (time.perf_counter() - t) / reps
        # ANCHOR_END: drop
        k = measure(kept, warmup=0, repeats=reps)
        print(
            f"{dev} {n}x{n} (a*b+c).exp() round {r}: dropped {fmt_duration(dropped)} per eval;"
            f" kept+sync each min {fmt_duration(k.min)} median {fmt_duration(k.median)}"
        )
        record("drop.dropped_per_eval", dropped, "s", round=r, **tags)
        record_stats("drop.kept", k, round=r, **tags)


# ---------------------------------------------------------------- chain8


# ANCHOR: chain8
def chain8(x: torch.Tensor) -> torch.Tensor:
    y = (x * 0.5 + 0.25).sin().abs()
    return (y * 0.5 + 0.25).sin().abs()
# ANCHOR_END: chain8


def chain8_report(dev: str, n: int, x: torch.Tensor, f, label: str) -> None:
    tags = dict(framework=FW, device=dev, size=n, variant=label)
    name = "chain8" if label == "eager" else "chain8 compiled"
    t = time.perf_counter()
    f(x).cpu()
    first = time.perf_counter() - t
    print(f"{dev} {n}x{n} {name} first call (read back): {fmt_duration(first)}")
    record("chain8.first_call", first, "s", **tags)

    def once() -> None:
        y = f(x)
        sync(dev)
        del y

    wall = measure(once, warmup=1, repeats=10)
    print(
        f"{dev} {n}x{n} {name} wall (sync), 10 runs:"
        f" min {fmt_duration(wall.min)} median {fmt_duration(wall.median)}"
    )
    record_stats("chain8.wall", wall, **tags)
    if dev == "cpu":
        return  # no device clock: the wall time above is the time of the work
    # ANCHOR: events
    # 量法由设备决定：CUDA 用 torch.Event，MPS 先同步再量墙钟（bookrec.device_time）
    dt, timing = device_time(lambda: f(x), dev, warmup=1, repeats=10)
    record_stats("chain8.device", dt, timing=timing, **tags)
    # ANCHOR_END: events
    print(
        f"{dev} {n}x{n} {name} device time ({TIMING_LABELS[timing]}), 10 runs:"
        f" min {fmt_duration(dt.min)} median {fmt_duration(dt.median)}"
    )


def run_chain8(dev: str, n: int) -> None:
    x = rand(n, dev)
    chain8_report(dev, n, x, chain8, "eager")
    if dev == "cpu":
        print("cpu: no separate device time; the call returns when the work is done, so the wall time is it")
    print("torch.compile: fresh empty TORCHINDUCTOR_CACHE_DIR (cold compile)")
    chain8_report(dev, n, x, torch.compile(chain8), "compiled")


# ---------------------------------------------------------------- accuracy


def deterministic_input() -> torch.Tensor:
    """x = 10·sin(k), k = 0..65535, computed in f64 and rounded to f32, as [256, 256]."""
    k = torch.arange(256 * 256, dtype=torch.float64)
    return (10.0 * torch.sin(k)).to(torch.float32).reshape(256, 256)


def run_accuracy(dev: str) -> None:
    x = deterministic_input()
    ref = chain8(x.to(torch.float64))  # f64 on the CPU: the reference
    for label, f in [("eager", chain8), ("compiled", torch.compile(chain8))]:
        got = f(x.to(dev)).cpu().to(torch.float64)
        err = (got - ref).abs().max().item()
        name = f"torch {dev}" + (" compiled" if label == "compiled" else "")
        print(f"{name:<20} max|x - f64 ref| = {err:.3e}")
        record("accuracy.max_abs_err", err, "", framework=FW, device=dev, variant=label)


# ---------------------------------------------------------------- errors


# ANCHOR: where_raised
def where_raised(dev: str, f) -> tuple[str, str]:
    """调用时报、下一次同步时报，还是不报；返回位置和报错信息。"""
    try:
        f()
    except Exception as e:
        print(f"--- raised at the call: {short(e)}")
        return "call", short(e)
    try:
        sync(dev)
    except Exception as e:
        print(f"--- raised at the next sync: {short(e)}")
        return "next sync", short(e)
    print("--- returned, and the next sync returned too")
    return "none", ""
# ANCHOR_END: where_raised


def os_would_overcommit(nbytes: int) -> str:
    """Why the OS would grant a CPU allocation of nbytes (more than RAM + swap) without
    failing at once, or "" when it refuses it at the call (Linux overcommit modes 0 and 2)."""
    if sys.platform != "linux":
        return f"{sys.platform} overcommits virtual memory"
    with open("/proc/sys/vm/overcommit_memory") as f:
        if f.read().strip() == "1":
            return "vm.overcommit_memory = 1 (always overcommit)"
    with open("/proc/meminfo") as f:
        kib = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in f)}
    if nbytes <= (kib["MemTotal"] + kib["SwapTotal"]) * 1024:
        return "RAM + swap are larger than the allocation"
    return ""


def short(e: Exception) -> str:
    """Type and the first line of the message, cut after two sentences (CUDA's OOM text
    goes on with the allocator's state)."""
    sentences = str(e).splitlines()[0].split(". ")
    text = ". ".join(sentences[:2]) + (". ..." if len(sentences) > 2 else "")
    return f"{type(e).__name__}: {text}"


def run_errors(dev: str) -> None:
    tags = dict(framework=FW, device=dev)
    # ANCHOR: shape
    a = torch.ones(2, 3, device=dev)
    b = torch.ones(2, 3, device=dev)
    print(f"--- {dev}: a @ b with [2, 3] x [2, 3]")
    where, msg = where_raised(dev, lambda: a @ b)
    # ANCHOR_END: shape
    record("errors.shape.where", where, **tags)
    record("errors.shape.message", msg, **tags)

    print(f"--- {dev}: torch.zeros(2**18, 2**18, device={dev!r}) + 1")
    why_not = dev == "cpu" and os_would_overcommit(2**36 * 4)
    if why_not:
        # The allocation would succeed and zeros() would then touch 256 GiB of pages.
        print(f"--- skipped: {why_not}; the allocation would not fail at once here")
        record("errors.huge.where", "skipped", **tags)
        return
    # ANCHOR: huge
    where, msg = where_raised(dev, lambda: torch.zeros(2**18, 2**18, device=dev) + 1)
    # ANCHOR_END: huge
    record("errors.huge.where", where, **tags)
    record("errors.huge.message", msg, **tags)


# ---------------------------------------------------------------- main


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, dev = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    require_device(dev)
    print(f"torch {torch.__version__}, device {dev}, {torch.get_num_threads()} CPU threads")
    modes = {
        "ret": lambda: run_ret(dev, n),
        "drop": lambda: run_drop(dev, n, reps),
        "chain8": lambda: run_chain8(dev, n),
        "accuracy": lambda: run_accuracy(dev),
        "errors": lambda: run_errors(dev),
    }
    if mode not in modes:
        sys.exit(f"unknown mode {mode!r}; one of {', '.join(modes)}")
    try:
        modes[mode]()
    finally:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
