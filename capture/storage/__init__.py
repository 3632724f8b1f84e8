"""Where results are kept: fragment keys and repository paths, atomic text+metadata pairs,
record files, and the fragment store itself (store.Store).

May use: system.
"""
