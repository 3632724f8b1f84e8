"""No program output on a page disagrees with the records it prints, beyond the digits it shows.

Every fresh fragment of every platform is checked (capture/evidence/digits.py). A stale fragment (its program
changed since its capture) is its machine's to capture again; `python -m capture status` names it, and the page
marks it 「（旧）」.
"""

from pathlib import Path

from capture.evidence.book import Book
from capture.evidence.digits import disagreements
from capture.storage.keys import FragmentKey

ROOT = Path(__file__).resolve().parents[2]


def test_fresh_outputs_print_their_records_with_the_digits_they_have():
    book = Book(ROOT)
    bad, checked = [], 0
    for plat in book.platforms():
        for exp in book.manifest.experiments:
            for role in exp.roles:
                key = FragmentKey(exp.id, role)
                st = book.state(plat, key)
                if st.state != "fresh" or st.fragment is None:
                    continue
                checked += 1
                text = (book.folder(plat) / f"{key}.txt").read_text(encoding="utf-8")
                bad += [f"{plat}/{key}.txt {d}" for d in disagreements(text, st.fragment.meta.get("records") or [])]
    assert checked > 20
    assert not bad, "\n".join(bad)
