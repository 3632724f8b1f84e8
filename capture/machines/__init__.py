"""Which machine this is and what it can run: platform keys and detection (platform), device
roles (roles), host fingerprints (fingerprint), a platform's platform.json (identity), the one-host-per-
platform rule (hosts), interpreter and toolchain versions (versions), the reader's own machine kept outside
the book (yours).

May use: system, storage.
"""
