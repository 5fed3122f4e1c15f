"""Build the compiled batch engine (plain C against the CPython API; no NumPy headers needed): the
engine core (``sim/engine/_core``) and the Slurm pieces it calls (``sim/slurm/_core``), one file per
kind of piece, each registering its plugins by the names Slurm users know (``plugins.h``), and
kube-scheduler's node choice for the Kubernetes model (``sim/kubernetes/_core``)."""

from glob import glob

from setuptools import Extension, setup

CORE = "src/gpuplan/sim/engine/_core"
SLURM = "src/gpuplan/sim/slurm/_core"
KUBE = "src/gpuplan/sim/kubernetes/_core"
PIECES = ("policies", "backfill_map", "select", "priority", "qos", "preempt", "reservations", "lending", "topology")

setup(
    ext_modules=[
        Extension(
            "gpuplan.sim.engine._batchcore",
            sources=[
                f"{CORE}/module.c",
                f"{CORE}/engine.c",
                f"{CORE}/settings.c",
                *(f"{SLURM}/{piece}.c" for piece in PIECES),
                f"{KUBE}/nodes.c",
            ],
            include_dirs=[CORE, SLURM, KUBE],
            depends=sorted(glob(f"{CORE}/*.h") + glob(f"{SLURM}/*.h") + glob(f"{KUBE}/*.h")),
            extra_compile_args=["-O2", "-falign-loops=32"],
        )
    ]
)
