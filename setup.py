"""Build the compiled batch engine (plain C against the CPython API; no NumPy headers needed): the
engine core (``sim/engine/_core``) and the Slurm pieces it calls (``sim/slurm/_core``)."""

from setuptools import Extension, setup

CORE = "src/gpuplan/sim/engine/_core"
SLURM = "src/gpuplan/sim/slurm/_core"

setup(
    ext_modules=[
        Extension(
            "gpuplan.sim.engine._batchcore",
            sources=[
                f"{CORE}/module.c",
                f"{CORE}/engine.c",
                f"{SLURM}/policies.c",
                f"{SLURM}/priority.c",
                f"{SLURM}/backfill_map.c",
            ],
            include_dirs=[CORE, SLURM],
            depends=[f"{CORE}/engine.h", f"{SLURM}/backfill_map.h"],
            extra_compile_args=["-O2"],
        )
    ]
)
