"""The operating system, in words the rest of the engine can use. Knows nothing of the book.

regular: read only regular files (no FIFOs, devices, links out of the store); oserror: an OSError as one
located line; reaper: every process a run starts ends with the run; runner: run one command with a
timeout, an output cap and signal handling; outstreams: stdout/stderr that cannot fail; progress: the
progress line of a long run.

May use: the standard library only.
"""
