"""Sphinx wiring for the capture engine: directives and roles that read fragments.

Only this subpackage imports Sphinx; the core (capture.*) does not.
"""

from . import volumes


def setup(app):
    volumes.setup(app)  # {vol} role: references into the burn / candle volumes
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1"}
