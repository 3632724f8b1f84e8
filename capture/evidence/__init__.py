"""What the fragments say: the query language (query), measured drift and the three-valued
verdict rule (drift, verdict), like-for-like checks (alike), the one formatter (fmt, controls), the
answer to "what is this reference on this machine" (book), claims and their share of cannot-tell
(claims, share), the verdicts' history and noise tests (noise), fragment states for status (status), each
chapter's findings and every machine's answer to them (findings).

May use: system, storage, machines, plan, toolchains. Never runs an experiment or writes a fragment.
"""
