"""Running it: regenerate (build, run, record, publish each stale fragment), the repository
watch that stops a run whose inputs changed under it (repowatch), review of changed outputs (review,
normalize), and the scrubbing of local paths from outputs (sanitize).

May use: system, storage, machines, plan, toolchains, evidence.
"""
