"""eager 和延迟执行：下标越界，单独一个进程。

    python exec_oob.py DEVICE        (cpu | cuda | mps)

x = [1, 2, 3] on the device, y = x[i] with i = [5]; then an unrelated z = x * 2 is read
twice before y is read. Each step prints what it returned or raised, so the whole story is
told even where an error surfaces late. On CUDA a device-side assert leaves the context
broken for the rest of the process: that is why this runs apart from exec_gpu.py.
"""

from __future__ import annotations

import sys

import torch

from bookrec import record, require_device

FW = "torch"


def step(label: str, f):
    """Run one step; print what it returned or raised. Returns (ok, value)."""
    try:
        v = f()
    except Exception as e:  # torch.AcceleratorError on a GPU, IndexError on the CPU
        msg = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        print(f"{label} raised: {msg}", flush=True)
        return False, msg
    shown = "returned" if isinstance(v, torch.Tensor) and v.device.type != "cpu" else f"-> {v}"
    print(f"{label} {shown}", flush=True)
    return True, v


def skip(label: str):
    print(f"{label} skipped: there is no z", flush=True)
    return False, None


def main() -> None:
    dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    require_device(dev)
    tags = dict(framework=FW, device=dev)
    print(f"torch {torch.__version__}, device {dev}")

    # ANCHOR: oob
    x = torch.tensor([1.0, 2.0, 3.0], device=dev)
    i = torch.tensor([5], device=dev)
    ok, y = step("y = x[i]", lambda: x[i])  # 下标 5 越界
    # ANCHOR_END: oob
    record("oob.step", "returned" if ok else "raised", step="index", **tags)
    if not ok:
        # The CPU checks the index while computing, inside the call.
        record("oob.outcome", "raised at call", **tags)
        record("oob.message", y, **tags)
        return

    # ANCHOR: oob_after
    ok_z, z = step("z = x * 2", lambda: x * 2)  # 和 y 无关的另一个张量
    ok_z1, z1 = step("z.cpu()", lambda: z.cpu()) if ok_z else skip("z.cpu()")
    ok_z2, _ = step("z.cpu() again", lambda: z.cpu()) if ok_z else skip("z.cpu() again")
    ok_y, y_read = step("y.cpu()", lambda: y.cpu())
    # ANCHOR_END: oob_after

    steps = [("z_op", ok_z), ("z_read", ok_z1), ("z_read_again", ok_z2), ("y_read", ok_y)]
    for name, ok_s in steps:
        skipped = not ok_z and name.startswith("z_read")
        record("oob.step", "skipped" if skipped else "returned" if ok_s else "raised", step=name, **tags)
    if not ok_z:
        outcome = "raised at next op"
    elif not ok_z1:
        outcome = "raised at next sync"
    elif not ok_y:
        outcome = "raised at read of y"
    else:
        outcome = f"silent: read {y_read.tolist()[0]:g}"
    record("oob.outcome", outcome, **tags)
    first_error = next((v for ok_s, v in [(ok_z, z), (ok_z1, z1), (ok_y, y_read)] if not ok_s), None)
    if first_error:
        record("oob.message", first_error, **tags)
    if not (ok_z and ok_z1):
        # Sticky: after the error was raised once, does the next read in this process fail too?
        later_ok = ok_z2 if ok_z else ok_y
        record("oob.sticky", not later_ok, **tags)


if __name__ == "__main__":
    main()
