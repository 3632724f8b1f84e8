"""Sessions of the book. Thin on purpose: the work is in `python -m capture` and Sphinx.

    nox -s regenerate [-- --only ID ... --device cpu|gpu --force]   run what changed on this machine
    nox -s docs                                                      strict build of the site
    nox -s tests                                                     machinery tests + re-run and compare + strict build
    nox -s status [-- --json]                                        fresh / stale / missing / failed, per platform
    nox -s lint                                                      ruff; rustfmt, clippy, cargo test (tests runs it)
    nox -s serve                                                     live preview while writing
"""

import os

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["regenerate", "docs"]

SPHINX = ["sphinx-build", "-W", "-n", "--keep-going", "-b", "html", "-c", ".", "docs", "docs/_build/html"]


def install(session, *extras):
    """Install exactly what uv.lock pins (never re-resolve), into this session's venv."""
    args = ["uv", "sync", "--frozen", "--no-install-project"] + [f"--extra={e}" for e in extras]
    session.run_install(*args, env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}, silent=True)


@nox.session
def regenerate(session):
    """Build and run the experiments this machine can run; capture their output into docs/_fragments."""
    install(session, "run")
    session.run("python", "-m", "capture", "regenerate", *session.posargs)


@nox.session
def docs(session):
    """Build the site strictly (-W, nitpicky) from the committed fragments; no GPU needed."""
    install(session, "docs")
    session.run(*SPHINX, *session.posargs)
    session.log("site: docs/_build/html/index.html")


@nox.session
def status(session):
    """Per platform: fresh / stale / missing / failed for every experiment and role, and failing claims."""
    install(session)
    session.run("python", "-m", "capture", "status", *session.posargs)


@nox.session
def tests(session):
    """Machinery tests, browser tests, re-run this machine's experiments against the fragments, strict build."""
    session.notify("lint")  # runs after this session, reusing the release build it made
    install(session, "run", "docs", "test")
    session.run("python", "-m", "pytest", *(session.posargs or ["-q"]))
    session.run("python", "-m", "capture", "check")
    session.run(*SPHINX[:-1], os.path.join(session.create_tmp(), "html"))


@nox.session
def lint(session):
    """ruff for the Python code; rustfmt, clippy (burn's Metal path included) and cargo test for the crates."""
    args = ["uv", "sync", "--frozen", "--no-install-project", "--only-group", "lint"]
    session.run_install(*args, env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}, silent=True)
    session.run("ruff", "check", ".")
    session.run("python", "-m", "capture.lint")


@nox.session(default=False)
def serve(session):
    """Live preview: rebuild on change and reload the browser."""
    install(session, "docs", "serve")
    session.run("sphinx-autobuild", *SPHINX[1:], "--watch", "snippets", "--watch", "crates", "--watch", "capture", *session.posargs)
