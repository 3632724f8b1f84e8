"""What to run: the manifest docs/experiments.toml (manifest), the files an experiment depends on
and their hash (inputs, sourcehash), the regions a page shows (regions), the cache state an experiment
is measured in (caches).

May use: system, storage, machines.
"""
