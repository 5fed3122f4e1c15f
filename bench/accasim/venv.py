"""Throw-away virtual environment for AccaSim 1.1.3, and a runner for ``run_accasim.py``.

AccaSim is never imported here: it runs in its own venv (it needs a ``collections.Mapping`` shim
on Python >= 3.10, and pulls in matplotlib/scipy we do not want in gpuplan's environment).

Example::

    from pathlib import Path
    from bench.accasim.venv import ensure_accasim_venv, run_accasim

    py = ensure_accasim_venv(Path("/tmp/accasim-venv"))
    result = run_accasim(py, Path("lublin_256.swf.gz"), "easy", nodes=256)
    print(result["jobs_per_s"])
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ACCASIM_VERSION = "1.1.3"
# accasim's declared dependencies (matplotlib, psutil, sortedcontainers, numpy, scipy) come with it.
ACCASIM_REQUIREMENTS: tuple[str, ...] = (f"accasim=={ACCASIM_VERSION}",)
RUN_SCRIPT = Path(__file__).resolve().with_name("run_accasim.py")


def _venv_python(path: Path) -> Path:
    if os.name == "nt":
        return path / "Scripts" / "python.exe"
    return path / "bin" / "python"


def _has_accasim(python: Path) -> bool:
    probe = (
        "import importlib.metadata as m, sys; "
        f"sys.exit(0 if m.version('accasim') == '{ACCASIM_VERSION}' else 1)"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, check=False)
    return done.returncode == 0


def ensure_accasim_venv(path: Path, base_python: Path | None = None) -> Path:
    """Create the venv at `path` with accasim 1.1.3 if it is not there yet; return its python.

    `base_python` is the interpreter the venv is built from (default: the one running this code).
    Use the same interpreter as the gpuplan side of the benchmark: on this machine Debian's
    /usr/bin/python3.11 (PGO/LTO build) runs AccaSim about 1.3x faster than pyenv's 3.11.7.
    """
    python = _venv_python(path)
    if python.exists() and _has_accasim(python):
        return python
    base = str(base_python) if base_python is not None else sys.executable
    if not python.exists():
        # -I: isolated mode, so this very file (venv.py) cannot shadow the stdlib venv module when
        # the current directory is bench/accasim.
        subprocess.run([base, "-I", "-m", "venv", str(path)], check=True)
    subprocess.run(
        [
            str(python),
            "-I",
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *ACCASIM_REQUIREMENTS,
        ],
        check=True,
    )
    if not _has_accasim(python):
        raise RuntimeError(f"accasim {ACCASIM_VERSION} is not importable from {python}")
    return python


def run_accasim(
    python: Path,
    trace: Path,
    policy: str,
    nodes: int,
    arrival_scale: float = 1.0,
    out_dir: Path | None = None,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """Run run_accasim.py with the venv's `python`; return the JSON object it prints.

    `policy` is "fifo" or "easy"; `nodes` is the number of 1-core nodes; `arrival_scale`
    multiplies submit times (0.5 halves inter-arrival times). `out_dir` keeps AccaSim's files.
    """
    if policy not in ("fifo", "easy"):
        raise ValueError(f"policy must be 'fifo' or 'easy', not {policy!r}")
    cmd = [
        str(python),
        str(RUN_SCRIPT),
        str(trace),
        "--policy",
        policy,
        "--nodes",
        str(nodes),
        "--arrival-scale",
        repr(arrival_scale),
    ]
    if out_dir is not None:
        cmd += ["--out", str(out_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"AccaSim run failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-4000:]}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if not lines:
        raise RuntimeError(f"AccaSim printed no result: {' '.join(cmd)}\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


USAGE = "usage: python venv.py VENV_DIR TRACE fifo|easy NODES [ARRIVAL_SCALE]"


def _main(argv: list[str]) -> int:
    """Build the venv if needed and run AccaSim once (see USAGE)."""
    if len(argv) not in (4, 5):
        sys.stderr.write(USAGE + "\n")
        return 2
    python = ensure_accasim_venv(Path(argv[0]))
    scale = float(argv[4]) if len(argv) == 5 else 1.0
    result = run_accasim(python, Path(argv[1]), argv[2], int(argv[3]), scale)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
