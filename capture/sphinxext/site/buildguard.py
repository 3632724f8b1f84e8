"""One docs build at a time per output folder, and an interrupted build never leaves the next one half done.

- Two builds into one folder (`nox -s docs` twice, a preview beside a build) take turns: each holds an
  flock on the output folder from before the environment is loaded until the build ends, and a build
  that has to wait says for whom. Without it both write the same files, and Sphinx writes its search
  index through one fixed temporary name (searchindex.js.tmp): the second rename fails.
- Sphinx saves its environment after reading and only then writes the pages and the search index; it
  drops the saved environment after an error, but not after Ctrl-C. A build stopped in between
  (Ctrl-C, SIGTERM, a crash) leaves an environment that calls every page up to date while pages and
  the index were never written: the next build rejects the index, the one after publishes an index of
  the few pages it rewrote. So a marker (`book-build-incomplete` in the doctree folder) is written when a
  build starts and removed when it ends without an exception; a build that finds it starts from a fresh
  environment, reading and writing every page.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError
from sphinx.util import logging

from capture.system import oserror

logger = logging.getLogger(__name__)

MARKER = "book-build-incomplete"
ENV_PICKLE = "environment.pickle"  # sphinx.application.ENV_PICKLE_FILENAME


def _lock(app: Sphinx) -> None:
    """Hold the output folder for this build (released when the build ends, or with the process)."""
    fd = os.open(app.outdir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        logger.info(f"waiting for another docs build into {app.outdir} to finish")
        start = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_EX)
        logger.info(f"the other build finished after {time.monotonic() - start:.0f} s; building")
    except OSError:  # a file system without flock: no turn-taking, the rest still holds
        pass
    app._book_build_lock = fd


def _unwritable(what: str, folder: Path, e: OSError, other: str) -> ConfigError:
    """One line for a build folder the build cannot write: the folder, why, and what to do."""
    at = f" ({e.filename})" if e.filename and str(e.filename) != str(folder) else ""
    if e.errno == errno.EROFS:  # chmod cannot help
        fix = "remount it writable or build into another folder"
    elif e.errno in (errno.EACCES, errno.EPERM):
        fix = f"make it writable (chmod -R u+w {_nearest_existing(folder)}) or build into another folder"
    elif e.errno in oserror.FULL:
        fix = "free space on that disk or build into another folder"
    elif e.errno in (errno.ENOTDIR, errno.EEXIST):
        fix = "move away the file that is where a folder goes, or build into another folder"
    else:
        fix = "fix that path or build into another folder"
    return ConfigError(f"cannot write the build's {what}: {folder}: {e.strerror or e}{at}; {fix} ({other}), "
                       "then run the command again")


def _nearest_existing(path: Path) -> Path:
    """The path itself or its nearest folder above that exists: the one whose permissions decide a write."""
    return next((p for p in (path, *path.parents) if os.path.lexists(p)), path)


def _make_outdir(app: Sphinx) -> None:
    """Create the output folder before Sphinx does (it would stop with an exception and its traceback log)."""
    if os.path.isdir(app.outdir):
        return
    try:
        os.makedirs(app.outdir, exist_ok=True)
    except OSError as e:  # a read-only docs/_build (or checkout), a full disk
        raise _unwritable("output folder", Path(app.outdir), e, "sphinx-build ... SOURCEDIR OTHER_DIR") from None


def on_config_inited(app: Sphinx, config: Config) -> None:
    _lock(app)
    doctrees = Path(app.doctreedir)
    marker = doctrees / MARKER
    try:
        if marker.exists():
            logger.info("the previous build of this folder was interrupted: reading and writing every page again")
            with contextlib.suppress(FileNotFoundError):
                (doctrees / ENV_PICKLE).unlink()
        doctrees.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"pid {os.getpid()}\n", encoding="utf-8")
    except OSError as e:  # read-only, or a file where a folder goes: said in one line, not an extension's traceback
        raise _unwritable("doctree folder", doctrees, e, "sphinx-build ... SOURCEDIR OTHER_DIR, or -d OTHER_DIR for "
                          "the doctrees alone") from None


def on_build_finished(app: Sphinx, exception) -> None:
    if exception is None:
        with contextlib.suppress(OSError):  # gone, or the folder became read-only: the next build only starts fresh
            (Path(app.doctreedir) / MARKER).unlink()
    fd = getattr(app, "_book_build_lock", None)
    if fd is not None:
        app._book_build_lock = None
        os.close(fd)  # releases the flock


def setup(app: Sphinx):
    _make_outdir(app)  # Sphinx makes it after loading the extensions, with an exception where it cannot
    app.connect("config-inited", on_config_inited, priority=0)  # before anything reads the saved environment
    app.connect("build-finished", on_build_finished, priority=1000)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
