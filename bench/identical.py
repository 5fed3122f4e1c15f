"""Are two builds' results bit-identical? Digests of every model's jobs, timeline, events and queues
tables (``*.parquet``).

``python bench/identical.py --write bench/results/identical-before.json`` runs ``gpuplan simulate``
(the installed one, or the build on ``PYTHONPATH``) on every bundled example and every shared trace
with each model, and writes one digest per case: of the tables' contents (schema and columns, not
the file bytes, so pyarrow's writer metadata does not count), of summary.json without its timings, or
of the exit status and message when the model refuses the input. ``--check FILE`` runs the same cases
and lists every one whose digest differs from FILE's; exit 1 if any does.

Run it on the commit before a change (``git worktree add``, ``pip install --no-deps --target DIR``,
``PYTHONPATH=DIR``) and on the change itself.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "src" / "gpuplan" / "examples"
SHARED = ROOT.parent / "shared" / "traces"
MODELS = ("slurm", "kubernetes", "hybrid")
# traces too large to run under every model in minutes: only the models named here. CEA-Curie under
# Kubernetes ran > 30 min without finishing (79,000 one-GPU nodes: kube-scheduler's filter and score
# over every node for each pending pod, each pass), LCG is 188,041 jobs
LIMITED = {"LCG-2005-1.swf.gz": ("slurm",), "CEA-Curie-2011-sample10k.swf.gz": ("slurm", "hybrid")}


def cases(with_shared: bool) -> Iterator[tuple[str, list[str]]]:
    """(case name, simulate arguments): each input with each model, Slurm's three backfill modes."""
    # a workload list is read by the scenario naming it, not simulated alone
    inputs = sorted(
        p for p in EXAMPLES.iterdir() if p.name != "README.md" and not p.name.endswith(".manifests.yml")
    )
    if with_shared:
        inputs += sorted(
            p
            for p in SHARED.rglob("*")
            if p.is_file() and p.suffix != ".md" and "summary" not in p.name and "node_list" not in p.name
        )
    for path in inputs:
        for model in LIMITED.get(path.name, MODELS):
            passes: list[list[str]] = [[]]
            if model != "kubernetes":
                passes = [[], ["--backfill", "easy"], ["--backfill", "none"]]
            for extra in passes:
                name = " ".join([path.name, model, *extra])
                yield name, [str(path), "--model", model, *extra]


def table_digest(path: Path, drop: tuple[str, ...] = ()) -> str:
    """The table's schema (without metadata) and its columns' values, as an Arrow IPC stream; the
    ``drop`` columns left out (a change that adds a column compares the rest)."""
    table = pq.read_table(path)
    table = table.drop_columns([name for name in drop if name in table.column_names])
    table = table.replace_schema_metadata(None)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in ("timing_s", "gpuplan_version")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def run_case(arguments: list[str], drop: tuple[str, ...] = ()) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-m", "gpuplan", "simulate", *arguments, "--out", out, "--quiet"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        if done.returncode != 0:
            return {"exit": str(done.returncode), "stderr": done.stderr.strip()[-400:]}
        summary = json.loads((Path(out) / "summary.json").read_text())
        tables = {name: Path(out) / f"{name}.parquet" for name in ("jobs", "timeline", "events", "queues")}
        return {
            **{name: table_digest(path, drop) for name, path in tables.items() if path.exists()},
            # the checkout's own path (an example's input path) does not count: builds in two
            # worktrees compare equal
            "summary": hashlib.sha256(
                json.dumps(without_timings(summary), sort_keys=True).replace(str(ROOT), "<root>").encode()
            ).hexdigest(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="write the digests to this file")
    group.add_argument("--check", type=Path, help="compare with the digests in this file")
    parser.add_argument("--no-shared", action="store_true", help="the bundled examples only")
    parser.add_argument("--only", default="", help="cases whose name contains this text")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--drop-column", action="append", default=[], help="leave this column out of the digests (repeat)"
    )
    args = parser.parse_args()
    drop = tuple(args.drop_column)

    with_shared = not args.no_shared and SHARED.is_dir()
    todo = [(name, arguments) for name, arguments in cases(with_shared) if args.only in name]
    with ThreadPoolExecutor(args.processes) as pool:
        digests = dict(
            zip(
                [n for n, _ in todo], pool.map(lambda a: run_case(a, drop), [a for _, a in todo]), strict=True
            )
        )

    if args.write:
        args.write.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        refused = sum("exit" in d for d in digests.values())
        print(f"{len(digests)} cases ({refused} refused by the model) -> {args.write}")
        return
    expected = json.loads(args.check.read_text())
    differ = [n for n in digests if expected.get(n) != digests[n]]
    missing = [n for n in expected if n not in digests and args.only in n]
    for name in differ:
        print(f"DIFFERS {name}: {expected.get(name)} -> {digests[name]}")
    for name in missing:
        print(f"NOT RUN {name}")
    same = len(digests) - len(differ)
    print(f"{same} of {len(digests)} cases identical to {args.check}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
