"""Which fragments of a platform were captured in one run: one sitting on one machine, whose common state
(its clock, its load, the lease it was lent on) moves all of them together.

A fragment captured since 2026-12-04 names its run: `run` in its metadata, one id per `regenerate`
invocation (capture/running/regenerate.py). An older fragment has none; its run is inferred from the times:
sorted by `started`, a new run begins where a fragment starts more than RUN_GAP_S after every earlier one
ended (`started` + `wall_s`). The two kinds never share a run: an inferred one is labelled by its first
`started`, a recorded one by its id.

The verdict rule (capture/evidence/verdict.py) widens a comparison of two figures of one kind from one run
by the drift the history measured for such pairs (capture/evidence/drift.py), where that is smaller.
"""

from __future__ import annotations

import datetime as dt

RUN_GAP_S = 30 * 60  # older fragments: a pause this long between captures starts another run


def _start(meta: dict) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(meta.get("started")))
    except ValueError:
        return None


def label(metas: dict[str, dict]) -> dict[str, str]:
    """fragment key -> its run's label, for one platform's fragments (metadata by key). A fragment without a
    usable `started` has no run (absent)."""
    out: dict[str, str] = {}
    timed = []
    for key, meta in metas.items():
        if isinstance(meta.get("run"), str) and meta["run"]:
            out[key] = "run:" + meta["run"]
        elif (start := _start(meta)) is not None:
            timed.append((start, key, float(meta.get("wall_s") or 0.0)))
    current, ended = "", None
    for start, key, wall in sorted(timed):
        if ended is None or (start - ended).total_seconds() > RUN_GAP_S:
            current = "started:" + start.isoformat()
        out[key] = current
        end = start + dt.timedelta(seconds=wall)
        ended = end if ended is None else max(ended, end)
    return out
