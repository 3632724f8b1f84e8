"""The command line: `python -m capture ...` (cli), check, compare, restamp, lint, the reader's machine (yours) and the
benchmarks of status and of the docs build (bench_status, bench_docs).

May use: every room below it.
"""
