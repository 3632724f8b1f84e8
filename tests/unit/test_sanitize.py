"""Personal paths in captured text become stable, readable forms (Linux and macOS style paths)."""

import pytest

from capture.running import normalize, sanitize

LINUX = sanitize.Places(root="/home/ada/src/book", home="/home/ada", tmp=("/tmp",))
MAC = sanitize.Places(root="/Users/ada/book", home="/Users/ada", tmp=("/var/folders/7x/k2j_3h4l5m/T",))
ROOT = sanitize.Places(root="/root/book", home="/root", tmp=("/tmp",))

PANIC = "thread 'main' (8473) panicked at {}/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/burn-tensor-0.22.1/src/tensor/api/numeric.rs:842:9:"
WANT_PANIC = "thread 'main' (8473) panicked at burn-tensor-0.22.1/src/tensor/api/numeric.rs:842:9:"


@pytest.mark.parametrize("places, home", [(LINUX, "/home/ada"), (MAC, "/Users/ada"), (ROOT, "/root")])
def test_cargo_registry_paths_become_crate_relative(places, home):
    assert sanitize.text(PANIC.format(home), places) == WANT_PANIC


def test_registry_under_a_custom_cargo_home_and_git_checkouts():
    text = (
        "at /opt/cargo/registry/src/index.crates.io-6f17d22bba15001f/candle-core-0.11.0/src/tensor.rs:10:5\n"
        "at /Users/ada/.cargo/git/checkouts/burn-0a1b2c3d4e5f6789/8f3e2a1/crates/burn-tensor/src/lib.rs:3:1\n"
    )
    assert sanitize.text(text, MAC) == (
        "at candle-core-0.11.0/src/tensor.rs:10:5\nat burn@8f3e2a1/crates/burn-tensor/src/lib.rs:3:1\n"
    )


@pytest.mark.parametrize(
    "places, raw, want",
    [
        # the checkout becomes relative, the home directory ~
        (LINUX, 'File "/home/ada/src/book/snippets/exec_gpu.py", line 12, in <module>',
         'File "snippets/exec_gpu.py", line 12, in <module>'),
        (MAC, 'File "/Users/ada/book/snippets/exec_gpu.py", line 12', 'File "snippets/exec_gpu.py", line 12'),
        (MAC, "cwd: /Users/ada/book", "cwd: ."),
        (MAC, "toolchain /Users/ada/.rustup/toolchains/stable-aarch64-apple-darwin", "toolchain ~/.rustup/toolchains/stable-aarch64-apple-darwin"),
        (LINUX, "log in /home/ada/.cache/eager-book/cargo.log", "log in ~/.cache/eager-book/cargo.log"),
        # temporary directories, macOS's per-user one included (also as its /private real path)
        (MAC, "cache /var/folders/7x/k2j_3h4l5m/T/exec-gpu-inductor-a1b2c3/x.py", "cache <tmp>/exec-gpu-inductor-a1b2c3/x.py"),
        (MAC, "cache /private/var/folders/7x/k2j_3h4l5m/T/tmpab12/x", "cache <tmp>/tmpab12/x"),
        (MAC, "metal /private/var/folders/qq/zz99/C/com.apple.metal/lib", "metal <tmp>/com.apple.metal/lib"),
        (LINUX, "cache in /tmp/torchinductor_ada/ab/cd.py", "cache in <tmp>/torchinductor_ada/ab/cd.py"),
        (MAC, "lock /private/tmp/x.lock", "lock <tmp>/x.lock"),
        # look-alikes stay: another user's home, a path that merely contains the home or tmp
        (LINUX, "/home/adam/notes and /data/home/ada/x", "/home/adam/notes and /data/home/ada/x"),
        (LINUX, "/home/ada/src/book2/x", "~/src/book2/x"),
        (LINUX, "~/tmp/x stays; so does /srv/tmp/y", "~/tmp/x stays; so does /srv/tmp/y"),
        (LINUX, "index 5 is out of bounds for dimension 0 with size 3", "index 5 is out of bounds for dimension 0 with size 3"),
    ],
)
def test_linux_and_macos_paths(places, raw, want):
    assert sanitize.text(raw, places) == want


def test_rewriting_is_idempotent_and_the_comparison_masks_still_apply():
    raw = PANIC.format("/Users/ada") + "\nscratch /tmp/run-1/a.txt\n"
    once = sanitize.text(raw, MAC)
    assert sanitize.text(once, MAC) == once
    assert normalize.skeleton(once) == normalize.skeleton(sanitize.text(PANIC.format("/home/bob") + "\nscratch /tmp/run-1/a.txt\n", LINUX))
    assert "ada" not in once and "(<tid>)" in normalize.skeleton(once)


def test_records_text_values_and_tags():
    recs = [
        {"name": "errors.shape.message", "value": "panic at /Users/ada/book/crates/x/src/main.rs:3:5", "unit": "", "tags": {"where": "/tmp/a"}},
        {"name": "t", "value": 1.5, "unit": "s", "tags": {"device": "mps"}},
    ]
    out = sanitize.records(recs, MAC)
    assert out[0]["value"] == "panic at crates/x/src/main.rs:3:5" and out[0]["tags"] == {"where": "<tmp>/a"}
    assert out[1] == recs[1] and recs[0]["value"].startswith("panic at /Users/ada")  # input untouched


def test_this_machine_places(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/home/ada")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    places = sanitize.here(tmp_path / "book")
    assert places.home == "/home/ada" and places.root == str(tmp_path / "book") and str(tmp_path) in places.tmp
    assert sanitize.text(f"{tmp_path}/book/snippets/a.py and {tmp_path}/other", places) == "snippets/a.py and <tmp>/other"
