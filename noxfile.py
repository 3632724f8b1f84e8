"""Sessions of the book. Thin on purpose: the work is in `python -m capture` and Sphinx.

    nox -s regenerate [-- --only ID ... --device cpu|gpu --force]   run what changed on this machine
    nox -s docs                                                      strict build of the site
    nox -s yours [-- --only ID ... | --chapter PAGE]                 your machine beside the book's, in a local site
    nox -s tests                                                     machinery tests + re-run and compare + strict build
    nox -s status [-- --json]                                        fresh / stale / missing / failed, per platform
    nox -s lint                                                      ruff; rustfmt, clippy, cargo test (tests runs it)
    nox -s compare -- --only ID ...                                  run experiments here, print their figures beside the book's
    nox -s serve                                                     live preview while writing
    nox -s upgrade -- candle-core 0.11.1                             try a new pin in a worktree, report what it changes

The sessions run on a Python that every locked wheel exists for (pyproject.toml's classifiers), found
or fetched by uv when the one running nox is not (capture/toolchains/pythons.py).
"""

import os
import shutil
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from capture.toolchains import pythons  # noqa: E402  (stdlib only)
from capture.machines.hosts import OTHER_HOST_EXIT  # noqa: E402  (stdlib only)

nox.needs_version = ">=2026.10.20"
nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["regenerate", "docs"]

PYTHON = pythons.choose(ROOT)
SPHINX = ["sphinx-build", "-W", "-n", "--keep-going", "-b", "html", "-c", ".", "docs", "docs/_build/html"]


def install(session, extras=(), groups=()):
    """Install exactly what uv.lock pins into this session's venv; fail if pyproject.toml and uv.lock disagree.

    Bytecode is compiled once at install: with PYTHONDONTWRITEBYTECODE set, every import of torch or
    Sphinx would otherwise compile from source again (seconds per run).
    """
    if PYTHON.error:
        session.error(PYTHON.error)
    if PYTHON.note:
        session.log(PYTHON.note)
    args = ["uv", "sync", "--locked", "--no-install-project", "--compile-bytecode"]
    args += [f"--extra={e}" for e in extras] + [f"--group={g}" for g in groups]
    env = {"UV_PROJECT_ENVIRONMENT": session.virtualenv.location, **PYTHON.env}
    session.run_install(*args, env=env, silent=True)


@nox.session(python=PYTHON.python)
def regenerate(session):
    """Build and run the experiments this machine can run; capture their output into docs/_fragments."""
    install(session, ["run"])
    # another machine's platform detected here: nothing is captured, the site still builds (capture/machines/hosts.py)
    session.run("python", "-m", "capture", "regenerate", *session.posargs, success_codes=[0, OTHER_HOST_EXIT])


@nox.session(python=PYTHON.python)
def docs(session):
    """Build the site strictly (-W, nitpicky) from the committed fragments; no GPU needed."""
    install(session, ["docs"])
    session.run(*SPHINX, *session.posargs, env={"BOOK_YOURS": ""})  # never the reader's machine (capture/machines/yours.py)
    session.log("site: docs/_build/html/index.html")


YOURS_SITE = "docs/_build/yours"


@nox.session(python=PYTHON.python, default=False)
def yours(session):
    """Your machine in the book: capture this host as the reader's own platform (.capture/yours/, outside the book;
    only what is stale), then build the local site with it beside the book's machines as 「你的机器」."""
    install(session, ["run", "docs"])
    # 1: some experiments failed here; the site says which, so it is built all the same
    session.run("python", "-m", "capture", "yours", *session.posargs, success_codes=[0, 1])
    if any(a in ("-h", "--help") or a.startswith("--promote") for a in session.posargs):
        return
    session.run("sphinx-build", "-n", "--keep-going", "-q", "-b", "html", "-c", ".", "-d", f"{YOURS_SITE}/doctrees",
                "docs", f"{YOURS_SITE}/html", env={"BOOK_YOURS": "1"})
    session.log(f"site with your machine: {YOURS_SITE}/html/index.html; "
                f"your machine against the book's: {YOURS_SITE}/html/appendix/yours.html")


@nox.session(python=PYTHON.python)
def status(session):
    """Per platform: fresh / stale / missing / failed for every experiment and role, and failing claims."""
    install(session)
    session.run("python", "-m", "capture", "status", *session.posargs)


@nox.session(python=PYTHON.python)
def tests(session):
    """Machinery tests, browser tests, re-run this machine's experiments against the fragments, strict build."""
    session.notify("lint")  # runs after this session, reusing the release build it made
    install(session, ["run", "docs"], ["test"])
    session.run("python", "-m", "pytest", *(session.posargs or ["-q"]))
    session.run("python", "-m", "capture", "check")
    session.run(*SPHINX[:-1], os.path.join(session.create_tmp(), "html"))


@nox.session(python=PYTHON.python)
def lint(session):
    """ruff for the Python code; rustfmt, clippy (burn's Metal path included) and cargo test for the crates."""
    install(session, [], ["lint"])
    session.run("ruff", "check", ".")
    session.run("python", "-m", "capture.commands.lint")


@nox.session(python=PYTHON.python, default=False)
def compare(session):
    """Run chosen experiments on this machine (a scratch store, never docs/_fragments); print their figures beside each captured platform's."""
    install(session, ["run"])
    session.run("python", "-m", "capture.commands.compare", *session.posargs)


@nox.session(python=PYTHON.python, default=False)
def upgrade(session):
    """Try new versions of pinned packages in a scratch worktree (.capture/upgrade/); report what they change
    (docs/dev/upgrades/<name>.md). `-- --adopt NAME` copies the pins and fragments into the book."""
    install(session, ["run"])
    session.run("python", "-m", "capture.commands.upgrade", *session.posargs, success_codes=[0, 1])


@nox.session(python=PYTHON.python, default=False)
def serve(session):
    """Live preview: rebuild on change and reload the browser."""
    install(session, ["docs"], ["serve"])
    session.run("sphinx-autobuild", *SPHINX[1:], "--watch", "snippets", "--watch", "crates", "--watch", "capture", *session.posargs)


@nox.session(default=False)
def mutate(session):
    """Mutation testing of the capture core ([tool.mutmut] in pyproject.toml) against the fast tests; not part of `tests`.

    Then `mutmut results` lists the surviving mutants and `mutmut show NAME` shows one.
    """
    install(session, [], ["test", "mutate"])
    # mutmut keeps a verdict per mutant and does not rerun it when only the tests changed: start clean,
    # so a test added since the last run counts (a full run is ~2 minutes on 2 cores)
    if not session.posargs:
        shutil.rmtree("mutants", ignore_errors=True)
    session.run("mutmut", "run", *session.posargs)
    session.run("mutmut", "results")
