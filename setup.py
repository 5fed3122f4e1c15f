"""Build the compiled pieces.

- The batch engine (plain C against the CPython API; no NumPy headers needed): the engine core
  (``sim/engine/_core``) and the Slurm pieces it calls (``sim/slurm/_core``), one file per kind of
  piece, each registering its plugins by the names Slurm users know (``plugins.h``), and
  kube-scheduler's node choice for the Kubernetes model (``sim/kubernetes/_core``).
- The Kubernetes model itself (Kueue, kube-scheduler, HPA, cluster autoscaler), compiled from its
  typed Python by mypyc: the same source, run as C. ``GPUPLAN_MYPYC=0`` builds without it (the
  modules then run as Python, with the same results: for working on them without rebuilding).
"""

import os
import tomllib
from glob import glob
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE = "src/gpuplan/sim/engine/_core"
SLURM = "src/gpuplan/sim/slurm/_core"
KUBE = "src/gpuplan/sim/kubernetes/_core"
PIECES = ("policies", "backfill_map", "select", "priority", "fairshare", "qos", "preempt", "reservations")
PIECES += ("lending", "topology", "power")
# the modules mypyc compiles: pyproject.toml's [tool.gpuplan] mypyc
COMPILED = [
    f"src/gpuplan/{path}" for path in tomllib.loads(Path("pyproject.toml").read_text())["tool"]["gpuplan"]["mypyc"]
]


def compiled_python() -> list[Extension]:
    if os.environ.get("GPUPLAN_MYPYC", "1") == "0":
        # an editable install's earlier compiled build would be imported before the source
        for source in map(Path, COMPILED):
            for built in source.parent.glob(f"{source.stem}.*.so"):
                built.unlink()
        return []
    from mypyc.build import mypycify

    # mypyc type-checks what it compiles on its own (NumPy's and pydantic's types come from the
    # build requirements, pyproject.toml); the strict check with the project's settings is CI's
    # `mypy`, so the modules the compiled ones import are read here for their types only
    config = Path("build", "mypyc.ini")
    config.parent.mkdir(exist_ok=True)
    config.write_text(
        "[mypy]\nplugins = pydantic.mypy\nignore_missing_imports = True\nfollow_imports = silent\n"
    )
    return mypycify([f"--config-file={config}", *COMPILED], group_name="gpuplan_kubernetes")


class BuildExt(build_ext):
    """mypyc's type check and C generation (tens of seconds) run when the extensions are built, not
    each time setuptools reads this file (pip reads it for the build requirements and the metadata
    too)."""

    def finalize_options(self) -> None:
        modules = self.distribution.ext_modules or []
        if not any(module.name.endswith("__mypyc") for module in modules):  # once per build
            self.distribution.ext_modules = [*modules, *compiled_python()]
        super().finalize_options()  # prepares every extension, the compiled modules included


setup(
    cmdclass={"build_ext": BuildExt},
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
            # -O3: GCC vectorises the bitmap loops (ANDs over a map record's words) only from -O3
            # on (at -O2 its cost model takes no loop whose trip count it cannot see). -fno-wrapv
            # undoes Python's own -fwrapv (sysconfig CFLAGS): the core relies on no signed overflow,
            # and with wrapping int32 indices GCC keeps sign-extending them in the hot loops
            # (bench_slurm_scale.py --sizes gpu --days 4 under callgrind: 6 % more instructions)
            extra_compile_args=["-O3", "-fno-wrapv", "-falign-loops=32"],
        ),
    ],
)
