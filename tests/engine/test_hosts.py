"""One platform, one machine: refusal, adoption and the "captured on another machine" state, end to end."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capture.machines import fingerprint
from capture.evidence.book import NOTE, WARN, Book
from capture.machines.hosts import HostMismatch
from capture.machines.identity import of_machine
from capture.storage.keys import FragmentKey
from capture.machines.platform import machine_record
from capture.evidence.status import collect
from capture.storage.store import Store
from tests.engine.book import CPU, make_book, run

SMALL = '''\
[defaults]
timeout = 60

[[experiment]]
id = "sleeper"
script = "snippets/sleeper.py"
args = ["slow", "0"]

[[experiment]]
id = "nap"
script = "snippets/sleeper.py"
args = ["slow", "0"]
'''
OTHER_CPU = "Some Other CPU(R) 9000"
REPO = Path(__file__).resolve().parents[2]


def tree(root: Path) -> dict[str, str]:
    """Every file under root (hidden ones too) with a hash of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def make_foreign(store_root: Path, key: str) -> None:
    """Turn the captured platform into another machine's: its platform.json names another CPU."""
    p = store_root / key / "platform.json"
    ident = json.loads(p.read_text())
    ident["cpu"] = OTHER_CPU
    ident["fingerprint"]["cpu"] = OTHER_CPU
    p.write_text(json.dumps(ident, indent=1))


@pytest.fixture
def small(tmp_path, monkeypatch):
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    layout = make_book(tmp_path / "book", SMALL)
    outcomes, _ = run(layout)
    assert {o.status for o in outcomes.values()} == {"ok"}
    return layout


def here() -> dict:
    return fingerprint.of_machine(machine_record(CPU))


def test_the_platform_records_its_machine_and_every_fragment_its_host(small):
    ident = json.loads((small.fragments / CPU.key / "platform.json").read_text())
    assert fingerprint.same(ident["fingerprint"], here())
    for js in (small.fragments / CPU.key).glob("*@*.json"):
        assert fingerprint.same(json.loads(js.read_text())["host"], here())


def test_another_machines_platform_is_refused_and_no_file_changes(small):
    make_foreign(small.fragments, CPU.key)
    before = tree(small.root)
    with pytest.raises(HostMismatch) as e:
        run(small, force=True)
    msg = str(e.value)
    assert OTHER_CPU in msg and "Nothing was written" in msg
    assert "nox -s regenerate -- --adopt" in msg and "BOOK_PLATFORM=linux-x86_64-cpu-" in msg
    assert tree(small.root) == before


def test_book_platform_naming_another_machine_is_refused_by_the_command(small):
    other = small.fragments / "linux-x86_64-nvidia-h200"
    (small.fragments / CPU.key).rename(other)
    ident = json.loads((other / "platform.json").read_text())
    ident.update(key="linux-x86_64-nvidia-h200", gpu="NVIDIA H200", cores=16)
    ident["fingerprint"].update(gpu="NVIDIA H200", gpu_count=1, cores=16)
    (other / "platform.json").write_text(json.dumps(ident, indent=1))
    before = tree(small.root)
    env = {**os.environ, "BOOK_PLATFORM": "linux-x86_64-nvidia-h200", "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "capture", "--root", str(small.root), "regenerate", "--force"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "this host is not the machine" in r.stderr and "NVIDIA H200" in r.stderr
    assert tree(small.root) == before


def test_adoption_replaces_the_platform_only_when_every_fragment_is_captured(small):
    make_foreign(small.fragments, CPU.key)
    old = tree(small.fragments / CPU.key)
    sleeper = small.root / "snippets/sleeper.py"
    good = sleeper.read_text()
    sleeper.write_text(good.replace('elif mode == "slow":', 'elif mode == "slow":\n    raise SystemExit(3)\nelif False:'))
    outcomes, out = run(small, adopt=True)
    assert {o.status for o in outcomes.values()} == {"failed"}
    assert "adoption not finished" in out
    assert tree(small.fragments / CPU.key) == old  # the old platform is whole
    sleeper.write_text(good)
    outcomes, out = run(small, adopt=True)
    assert {o.status for o in outcomes.values()} == {"ok"} and "adopted" in out
    ident = json.loads((small.fragments / CPU.key / "platform.json").read_text())
    assert fingerprint.same(ident["fingerprint"], here())
    assert not (small.root / ".capture/adopt" / CPU.key).exists()
    run(small)  # the host is now the platform's machine: a plain regenerate is allowed


def test_an_adoption_cut_between_its_two_renames_is_finished_by_the_next_run(small):
    from capture.machines import hosts

    make_foreign(small.fragments, CPU.key)
    stage = hosts.staging(small, CPU.key)
    run(small, adopt=True)  # a complete adoption, then pretend the second rename never happened:
    (stage.root).mkdir(parents=True)
    (small.fragments / CPU.key).rename(stage.root / CPU.key)
    (stage.root / hosts.COMPLETE).write_text("all fragments captured\n")
    outcomes, _ = run(small)
    assert (small.fragments / CPU.key / "platform.json").is_file()
    assert {o.status for o in outcomes.values()} == {"fresh"}


def test_a_fragment_from_another_host_is_its_own_state(small):
    js = small.fragments / CPU.key / "nap@cpu.json"
    meta = json.loads(js.read_text())
    meta["host"]["cpu"] = OTHER_CPU
    meta["machine"]["cpu"] = OTHER_CPU
    js.write_text(json.dumps(meta, indent=1))
    mine = of_machine(CPU, machine_record(CPU))
    book = Book(small.root, local=mine)
    st = book.state(CPU.key, FragmentKey("nap", "cpu"))
    assert st.state == "foreign" and not st.usable and st.severity == WARN and OTHER_CPU in st.detail
    assert book.state(CPU.key, FragmentKey("sleeper", "cpu")).state == "fresh"
    entries = {e.key: e for e in collect(book, [CPU.key])}
    assert entries["nap@cpu"].state == "foreign" and entries["nap@cpu"].blocks_check
    # seen from another machine of the same kind (a CI runner), the platform is not this host's own
    other = of_machine(CPU, {**machine_record(CPU), "cpu": "Yet Another CPU"})
    seen_elsewhere = Book(small.root, local=other)
    assert seen_elsewhere.local is None and "Yet Another CPU" in seen_elsewhere.other_host
    st = seen_elsewhere.state(CPU.key, FragmentKey("nap", "cpu"))
    assert st.state == "foreign" and st.severity == NOTE


def test_check_compares_on_any_host_and_writes_nothing(small):
    from capture.commands.check import check
    from capture.plan.manifest import load

    make_foreign(small.fragments, CPU.key)
    before = tree(small.fragments)
    import io

    assert check(small, load(small.manifest), Store(small.fragments), CPU, out=io.StringIO()) == 0
    assert tree(small.fragments) == before


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]", '{"key": 3, "roles": []}'])
def test_another_machines_broken_identity_is_shown_broken_and_blocks_nothing(small, content):
    import shutil

    other = small.fragments / "linux-x86_64-nvidia-other"
    shutil.copytree(small.fragments / CPU.key, other)
    (other / "platform.json").write_text(content)
    book = Book(small.root, local=of_machine(CPU, machine_record(CPU)))
    assert "linux-x86_64-nvidia-other" in book.platforms()
    assert "platform.json" in book.broken["linux-x86_64-nvidia-other"]
    entries = collect(book, book.platforms())
    assert {e.state for e in entries if e.platform == CPU.key} == {"fresh"}
    outcomes, _ = run(small)  # this machine's regenerate is not stopped by it
    assert {o.status for o in outcomes.values()} == {"fresh"}


def test_a_detected_platform_of_another_machine_captures_nothing_and_lets_the_site_build(small, monkeypatch):
    """The README's `nox -s regenerate docs` on a machine that is not the CPU platform's: regenerate writes
    nothing, says why, and exits OTHER_HOST_EXIT, which the nox session accepts so the docs still build."""
    from capture.machines.hosts import OTHER_HOST_EXIT

    make_foreign(small.fragments, CPU.key)
    before = tree(small.root)
    env = {k: v for k, v in os.environ.items() if k != "BOOK_PLATFORM"}
    env["PYTHONPATH"] = str(REPO)
    r = subprocess.run([sys.executable, "-m", "capture", "--root", str(small.root), "regenerate"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == OTHER_HOST_EXIT, r.stderr
    assert "nothing captured on this host" in r.stderr and "--adopt" in r.stderr
    assert tree(small.root) == before
    nox = (REPO / "noxfile.py").read_text()
    assert "success_codes=[0, OTHER_HOST_EXIT]" in nox
