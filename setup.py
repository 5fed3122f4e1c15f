"""Build the compiled batch engine (plain C against the CPython API; no NumPy headers needed)."""

from setuptools import Extension, setup

CORE = "src/gpuplan/sim/_core"

setup(
    ext_modules=[
        Extension(
            "gpuplan.sim._batchcore",
            sources=[f"{CORE}/module.c", f"{CORE}/engine.c", f"{CORE}/policies.c", f"{CORE}/priority.c", f"{CORE}/backfill_map.c"],
            depends=[f"{CORE}/engine.h", f"{CORE}/backfill_map.h"],
            extra_compile_args=["-O2"],
        )
    ]
)
