"""Sphinx wiring for the capture engine: directives and roles that read fragments.

Only this subpackage imports Sphinx; the core rooms do not. It is the top room (capture.ROOMS) and
only reads: it may use system, storage, machines, plan, toolchains and evidence, never running or
commands. Each module here is one directive family; this file only registers them.
"""

from pathlib import Path

from . import snippet
from .charts import DataChartDirective
from .claims import ClaimDirective
from .coderule import check_code_blocks
from .common import check_drift_file
from .comparisons import CmpRole
from .drifttable import DriftRole, DriftTableDirective
from .freshness import STORE
from .meta import MetaRole
from .numbers import NumRole
from .output import OutputDirective, OutputsDirective, check_tab_depth
from .reader import setup_nodes
from .platforms import PlatformTableDirective
from .scope import PerPlatformDirective, UntilCapturedDirective
from .verdicts import VerdictMatrixDirective
from .yours import YourMachineDirective
from .provenance import copy_provenance
from .share import report_share
from .snippet import SnippetDirective
from .tables import RecordsTableDirective
from .terms import check_terms, report_unused
from . import words
from .words import check_comparisons

STATIC = Path(__file__).resolve().parent / "static"


def _add_static(app, config):
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app):
    app.add_config_value("book_platforms", [], "env")  # platform keys, in order of preference
    app.add_config_value("book_root", "", "env")  # repository root (default: the conf.py folder)
    # this machine's platform key: its own stale/missing fragments fail a strict build
    # ("" = detect it, "none" = no machine, e.g. a docs-only build that cannot regenerate anything)
    app.add_config_value("book_local_platform", "", "env")
    # the reader's own machine beside the book's (capture/machines/yours.py): only the local site of `nox -s yours`
    app.add_config_value("book_yours", False, "env")
    app.add_config_value("book_code_rule_exempt", [], "env")
    # recorded words ({num} of an outcome like `silent: read 0`) as the reader reads them: {recorded: words}
    app.add_config_value("book_recorded_words", {}, "env")
    # sentences naming a backend / OS / device outside scoped blocks must be listed here (capture/sphinxext/terms.py)
    app.add_config_value("book_scope_allow", "", "env")
    app.add_config_value("book_scope_pages", [], "env")  # the reader pages it applies to
    words.add_config(app)  # book_words_pending: reader pages being rewritten, where the word checks only log
    app.add_directive("snippet", SnippetDirective)
    snippet.setup(app)  # which files pages show, for provenance
    app.add_directive("output", OutputDirective)
    app.add_directive("outputs", OutputsDirective)
    setup_nodes(app)  # a tooltip and a <details> for the reader (capture/sphinxext/reader.py)
    app.add_directive("records-table", RecordsTableDirective)
    app.add_directive("claim", ClaimDirective)
    app.add_directive("datachart", DataChartDirective)
    app.add_directive("per-platform", PerPlatformDirective)
    app.add_directive("until-captured", UntilCapturedDirective)
    app.add_directive("verdict-matrix", VerdictMatrixDirective)
    app.add_directive("platform-table", PlatformTableDirective)
    app.add_directive("your-machine", YourMachineDirective)
    app.add_directive("drift-table", DriftTableDirective)
    app.add_role("drift", DriftRole())
    app.add_role("num", NumRole())
    app.add_role("meta", MetaRole())
    app.add_role("cmp", CmpRole())
    app.connect("config-inited", _add_static)
    app.connect("builder-inited", check_drift_file)  # a bad docs/drift.json: one warning, then the default drift
    app.add_css_file("capture.css")
    app.connect("doctree-resolved", check_code_blocks)
    app.connect("doctree-resolved", check_terms)
    app.connect("doctree-resolved", check_tab_depth)
    app.connect("doctree-resolved", check_comparisons)
    app.connect("build-finished", report_unused)
    app.connect("build-finished", copy_provenance)
    app.connect("build-finished", report_share)
    STORE.connect(app)  # pages showing fragments are re-read when the store changes
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1"}
