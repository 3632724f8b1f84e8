"""Building what runs: the cargo build (build), binaries prebuilt for another machine and
the bundle that carries them (prebuilt, bundle), the CUDA and LLVM kits from PyPI wheels (cudakit,
llvmkit, wheelkit), which CubeCL compiler a build used (cudacompiler), the Pythons nox may use
(pythons), the site's offline mermaid (assets).

May use: system, storage, machines, plan.
"""
