"""The site's one front-end asset: mermaid, from the copy pinned in docs/_mermaid/.

The book renders its charts in the browser with mermaid's classic build
(`dist/mermaid.min.js`, one self-contained script). It is loaded as a plain <script>,
so charts draw over HTTP and when a page is opened from file:// (mermaid's ES module
build is blocked there), and nothing is fetched from a CDN.

The version is fixed by the committed docs/_mermaid/package.json and package-lock.json;
`npm ci` installs exactly that into docs/_mermaid/node_modules/ (gitignored) the first
time, and is skipped while the installed version matches the lock. Only the one file is
copied into a build's `_static/`; mermaid's dist is never committed.

    python -m capture.toolchains.assets [DEST_DIR]     # install (if needed) and copy into DEST_DIR

Stdlib only (Sphinx calls it through capture/sphinxext/mermaid_assets.py).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import filecmp
import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

NPM_DIR = Path(__file__).resolve().parents[2] / "docs" / "_mermaid"
DIST = Path("node_modules", "mermaid", "dist", "mermaid.min.js")
INSTALL_HINT = "install Node.js >= 20 with npm (Debian: apt-get install nodejs npm; macOS: brew install node)"


class AssetError(RuntimeError):
    """The pinned mermaid could not be installed or found."""


def locked_version(npm_dir: Path = NPM_DIR, package: str = "mermaid") -> str:
    """The version of `package` that package-lock.json pins."""
    lock = json.loads((npm_dir / "package-lock.json").read_text(encoding="utf-8"))
    return lock["packages"][f"node_modules/{package}"]["version"]


def installed_version(npm_dir: Path = NPM_DIR, package: str = "mermaid", dist: Path = DIST) -> str | None:
    """The version of `package` in node_modules, or None when absent or incomplete."""
    manifest = npm_dir / "node_modules" / package / "package.json"
    if not (npm_dir / dist).is_file() or not manifest.is_file():
        return None
    return json.loads(manifest.read_text(encoding="utf-8")).get("version")


@contextlib.contextmanager
def _install_lock(npm_dir: Path):
    """Two builds starting at once must not run `npm ci` into the same folder together."""
    with open(npm_dir / ".install.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_npm(npm_dir: Path, package: str, dist: Path, *, log=print) -> Path:
    """Return npm_dir/dist of the pinned `package`, running `npm ci` in npm_dir only if needed."""
    npm_dir = Path(npm_dir)
    want = locked_version(npm_dir, package)
    if installed_version(npm_dir, package, dist) == want:
        return npm_dir / dist
    with _install_lock(npm_dir):
        if installed_version(npm_dir, package, dist) == want:  # another process installed it meanwhile
            return npm_dir / dist
        npm = shutil.which("npm")
        if npm is None:
            raise AssetError(f"{package} {want} is not installed in {npm_dir} and npm is missing: {INSTALL_HINT}")
        log(f"installing {package} {want} into {npm_dir}/node_modules (npm ci, once)")
        cmd = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
        proc = subprocess.run(cmd, cwd=npm_dir, capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssetError(f"`npm ci` in {npm_dir} failed ({proc.returncode}):\n{proc.stderr.strip()}")
    got = installed_version(npm_dir, package, dist)
    if got != want:
        raise AssetError(f"after `npm ci` in {npm_dir}: {package} {got}, package-lock.json pins {want}")
    return npm_dir / dist


def ensure_mermaid(npm_dir: Path = NPM_DIR, *, log=print) -> Path:
    """Return the path of the pinned dist/mermaid.min.js, running `npm ci` only if needed."""
    return ensure_npm(npm_dir, "mermaid", DIST, log=log)


def copy_if_changed(src: Path, dest: Path) -> bool:
    """Copy src to dest unless dest already has the same bytes; True when it copied."""
    if dest.is_file() and filecmp.cmp(src, dest, shallow=False):
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")  # two builds never share it
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return True


def install_mermaid(dest_dir: Path, npm_dir: Path = NPM_DIR, *, log=print) -> Path:
    """Make `dest_dir/mermaid.min.js` the pinned classic build; return its path."""
    dest = Path(dest_dir) / "mermaid.min.js"
    copy_if_changed(ensure_mermaid(npm_dir, log=log), dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m capture.toolchains.assets", description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", nargs="?", type=Path, help="copy mermaid.min.js into this folder too")
    parser.add_argument("--npm-dir", type=Path, default=NPM_DIR, help="folder of package.json (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        path = install_mermaid(args.dest, args.npm_dir) if args.dest else ensure_mermaid(args.npm_dir)
    except AssetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"mermaid {locked_version(args.npm_dir)}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
