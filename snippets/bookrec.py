"""本书 Python 实验共用的小工具：记录测量值、统一的计时方法。

实验一边打印给读者看的文字，一边用 record() 把数值写成结构化记录，
写到环境变量 BOOK_RECORDS 指定的文件（每行一个 JSON 对象）；没有设置
这个变量时（例如手动运行脚本），记录被丢弃。计时方法和 Rust 一侧的
crates/bookrec 相同：先预热，再重复 N 次，报告最小值、中位数和最大值。

torch 的实验都从这里取设备相关的三样：require_device()、sync() 和
device_time()。torch 只在用到时才导入，所以不用 torch 的脚本也能用这个模块。
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Stats:
    """一组计时（秒）的最小值、中位数、最大值和样本数。"""

    min: float
    median: float
    max: float
    n: int

    @classmethod
    def from_samples(cls, samples: list[float]) -> "Stats":
        if not samples:
            raise ValueError("Stats.from_samples: no samples")
        s = sorted(samples)
        n = len(s)
        median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
        return cls(s[0], median, s[-1], n)


def record(name: str, value: float | str | bool, unit: str = "", **tags: object) -> None:
    """写一条记录：名字、值、单位（秒 "s"、字节 "B"），标签区分同名记录。"""
    path = os.environ.get("BOOK_RECORDS")
    if not path:
        return
    line = json.dumps(
        {"name": name, "value": value, "unit": unit, "tags": {k: str(v) for k, v in tags.items()}},
        ensure_ascii=False,
    )
    # 每条记录单独追加：程序中途崩溃时，已写的记录仍然完整
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def record_stats(name: str, s: Stats, **tags: object) -> None:
    """记录一组计时的 min / median / max（名字后加 .min 等后缀）。"""
    record(f"{name}.min", s.min, "s", **tags)
    record(f"{name}.median", s.median, "s", **tags)
    record(f"{name}.max", s.max, "s", **tags)


def measure(fn: Callable[[], object], *, warmup: int = 1, repeats: int = 10) -> Stats:
    """先不计时地调用 warmup 次，再计时 repeats 次；fn 自己负责在返回前同步设备。"""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return Stats.from_samples(samples)


def require_device(dev: str) -> None:
    """dev 不是 cpu 时，要求它正是本机 torch 看到的加速器；否则以状态 2 退出（实验跳过，不算失败）。"""
    if dev == "cpu":
        return
    import torch

    acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    if acc is None or acc.type != dev:
        have = acc.type if acc is not None else "none"
        print(f"device {dev!r} is not available here (accelerator: {have})", file=sys.stderr)
        sys.exit(2)


def sync(dev: str) -> None:
    """等设备把排好队的工作做完；CPU 上调用返回时就做完了，不用等。"""
    if dev != "cpu":
        import torch

        torch.accelerator.synchronize()


# 记录里 timing 标签的两种值（和 Rust 一侧 burn 的 profile 记录用同一个标签）
TIMING_LABELS = {"device": "torch.Event", "system": "sync + wall clock"}


# ANCHOR: device_time
def device_time(fn: Callable[[], object], dev: str, *, warmup: int = 1, repeats: int = 10) -> tuple[Stats, str]:
    """fn() 在设备上的时间，和量法（记录的 timing 标签）。

    CUDA：同一条流上记两个 torch.Event，读它们在 GPU 上的间隔，timing = "device"。
    其他设备（MPS）：先同步把队列清空，再量「调用 + 同步」的墙钟，timing = "system"。
    MPS 的事件计时在一些版本里会在 synchronize() 之后卡死（pytorch#162872），
    时间戳也曾经来自主机上的回调，所以这里不用它。
    """
    import torch

    for _ in range(warmup):
        fn()
        sync(dev)
    samples = []
    for _ in range(repeats):
        if dev == "cuda":
            start = torch.Event(enable_timing=True)
            end = torch.Event(enable_timing=True)
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)  # 毫秒换成秒
        else:
            sync(dev)
            t = time.perf_counter()
            out = fn()
            sync(dev)
            samples.append(time.perf_counter() - t)
        del out  # 结果在计时结束之后才释放
    return Stats.from_samples(samples), "device" if dev == "cuda" else "system"
# ANCHOR_END: device_time


def fmt_duration(seconds: float) -> str:
    """把秒写成读者习惯的样子：812.400µs、3.210ms、1.940s。"""
    if seconds >= 1:
        return f"{seconds:.3f}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f}ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3f}µs"
    return f"{seconds * 1e9:.1f}ns"
