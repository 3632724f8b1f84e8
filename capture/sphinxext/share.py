"""At the end of a build: per platform, how many timing verdicts the data decide (capture/evidence/share.py)."""

from pathlib import Path

from capture.evidence import share

from .common import book, logger


def report_share(app, exc) -> None:
    """Log the share of timing verdicts that say yes / no / cannot tell, naming the undecided ones with
    both sides' spreads widened by their drift, so an author sees which experiments need more repeats."""
    if exc is not None:
        return
    b = book(app.env)
    items = share.shares(b, Path(app.srcdir))
    if items:
        logger.info("timing verdicts (capture/evidence/verdict.py; python -m capture status lists them too):\n"
                    + share.render(items))
