"""Versions of what ran: torch (probed in the interpreter that runs the snippets), rustc, burn/candle from Cargo.lock."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

_TORCH_PROBE = r"""
import json, platform, sys
out = {"python": platform.python_version(), "executable": sys.executable}
if "--torch" not in sys.argv:
    print(json.dumps(out)); raise SystemExit
try:
    import torch
    out["torch"] = torch.__version__
    acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    out["accelerator"] = acc.type if acc is not None else None
    out["threads"] = torch.get_num_threads()
except Exception as e:  # reported, not fatal: a CPU-only box may still run other experiments
    out["torch_error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def probe_python(python: str, torch: bool = True) -> dict:
    """Versions from the interpreter that runs the snippets; importing torch (seconds) only when asked."""
    try:
        cmd = [python, "-c", _TORCH_PROBE] + (["--torch"] if torch else [])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"python_error": f"{python}: {e}"}
    if r.returncode != 0:
        return {"python_error": f"{python}: exit {r.returncode}: {r.stderr.strip()[-500:]}"}
    try:
        out = json.loads((r.stdout.strip().splitlines() or [""])[-1])
    except ValueError:
        out = None
    if not isinstance(out, dict) or not isinstance(out.get("python"), str):
        said = ((r.stdout.strip() or r.stderr.strip()).splitlines() or ["nothing"])[0][:60].strip()
        return {"python_error": f"{python} did not answer like a Python interpreter (it printed {said!r})"}
    return out


def interpreter_problem(python: str) -> str | None:
    """Why `python` (--python) cannot run the snippets, or None: missing, not a program, not Python 3."""
    import shutil

    found = shutil.which(python) if "/" not in python else (python if Path(python).is_file() else None)
    if found is None:
        return f"--python {python}: no such program (give the path of a Python 3 interpreter, e.g. .venv/bin/python)"
    info = probe_python(found, torch=False)
    if "python_error" in info:
        return f"--python: {info['python_error']}; give the path of a Python 3 interpreter"
    if not info["python"].startswith("3."):
        return f"--python {python} is Python {info['python']}; the snippets need Python 3"
    return None


def rustc_version() -> str | None:
    try:
        r = subprocess.run(["rustc", "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.strip() or None
    except OSError:
        return None


def lock_versions(cargo_lock: Path, names=("burn", "candle-core", "candle-nn", "cubecl")) -> dict:
    """Versions of the named packages as Cargo.lock pins them."""
    if not cargo_lock.is_file():
        return {}
    packages = tomllib.loads(cargo_lock.read_text(encoding="utf-8")).get("package", [])
    return {p["name"]: p["version"] for p in packages if p.get("name") in names}
