"""The capture engine: run the book's real snippet files, freeze their output into fragments.

The engine is cut into rooms, one subpackage per question. A room imports only rooms listed
before it in ROOMS (and itself); tests/unit/test_rooms.py checks that, and that the core (every
room but sphinxext) imports nothing outside the standard library, so that it also runs on a GPU
machine where nothing can be installed. ``capture.sphinxext`` is the only place that imports
Sphinx, and it only reads: it may not import the rooms from READ_ONLY_ABOVE on (they run
experiments or change the store). docs/dev/architecture.md draws the same list.
"""

__version__ = "0.1.0"

# Bottom to top. Each name is a subpackage of capture/; its __init__ docstring says what it holds.
ROOMS = (
    "system",      # the operating system: regular files, OS errors in words, processes, output streams
    "storage",     # where results are kept: names and paths, atomic pairs, records, the fragment store
    "machines",    # which machine this is: platforms, device roles, fingerprints, identity, hosts, versions
    "plan",        # what to run: the manifest, an experiment's inputs and their hashes, regions, caches
    "toolchains",  # building what runs: cargo builds, prebuilt bundles, CUDA and LLVM kits, Pythons, assets
    "evidence",    # what the fragments say: the query language, drift and verdicts, claims, formatting
    "running",     # running it: regenerate, the repository watch, review of changed outputs
    "commands",    # the command line: `python -m capture ...`, check, compare, restamp, lint, benchmarks
    "sphinxext",   # the Sphinx layer: directives and the site; reads fragments, runs nothing
)
READ_ONLY_ABOVE = "running"  # sphinxext may import the rooms before this one, not this one or later
