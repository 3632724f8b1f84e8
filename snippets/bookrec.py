"""本书 Python 实验共用的小工具：记录测量值、统一的计时方法。

实验一边打印给读者看的文字，一边用 record() 把数值写成结构化记录，
写到环境变量 BOOK_RECORDS 指定的文件（每行一个 JSON 对象）；没有设置
这个变量时（例如手动运行脚本），记录被丢弃。计时方法和 Rust 一侧的
crates/bookrec 相同：先预热，再重复 N 次，报告最小值、中位数和最大值。
"""

from __future__ import annotations

import json
import os
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


def fmt_duration(seconds: float) -> str:
    """把秒写成读者习惯的样子：812.400µs、3.210ms、1.940s。"""
    if seconds >= 1:
        return f"{seconds:.3f}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f}ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3f}µs"
    return f"{seconds * 1e9:.1f}ns"
