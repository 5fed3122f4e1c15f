"""Issue 43's item 7: what ``--skip-bad-lines`` costs. For each format, a trace of ``--lines`` job
lines is written twice into a temporary directory, clean and with ``--bad`` of its lines malformed
(spread over the file), and each is read in a process of its own, as ``gpuplan simulate`` reads it
(``load_input``, with pyarrow imported first as the commands import it):

    python bench/bench_bad_lines.py [--lines 200000] [--bad 200] [--formats swf,philly,sacct]

Prints, per format, the read time and the peak resident memory of the process for both files. A file
with bad lines should cost about what the clean one costs (before issue 43: 2.7 times the memory and
4 times the time for SWF, 6 times the time for sacct). Nothing is written outside the temporary
directory.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

# run in a process of its own: its peak memory is that of reading one trace
READ = """
import json, resource, sys, time
import pyarrow, pyarrow.compute  # imported by every command before the trace is read (Parquet)
from pathlib import Path
from gpuplan.inputs import InputOptions, load_input
began = time.perf_counter()
loaded = load_input(Path(sys.argv[1]), InputOptions(skip_bad_lines=True))
seconds = time.perf_counter() - began
print(json.dumps({"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "jobs": loaded.info["jobs_read"], "skipped": loaded.info["skipped_bad_lines"]}))
"""


def write_trace(path: Path, format: str, lines: int, bad: set[int]) -> None:
    """``lines`` job lines of ``format``; those at the indices ``bad`` have a malformed cell."""
    rng = random.Random(1)
    with path.open("w") as out:
        if format == "swf":
            out.write("; MaxProcs: 4096\n; UnixStartTime: 1600000000\n")
            for i in range(lines):
                run = "x" if i in bad else str(rng.randint(1, 5000))
                out.write(f"{i + 1} {i * 10} 0 {run} 8 -1 -1 8 7200 -1 1 {i % 50} {i % 7} -1 1 1 -1 -1\n")
        elif format == "philly":
            out.write("timestamp,duration,num_gpus,gpu_time,cluster\n")
            for i in range(lines):
                duration = "x" if i in bad else str(rng.randint(1, 5000))
                out.write(f"2017-10-0{1 + i % 9} {10 + i % 10}:00:00,{duration},{1 + i % 8},0,vc{i % 11}\n")
        elif format == "sacct":
            out.write("JobID|User|Account|Partition|QOS|Submit|Start|End|Timelimit|NNodes|AllocTRES|State\n")
            for i in range(lines):
                day = 1 + i % 9
                submit = "2024-01-0x" if i in bad else f"2024-01-0{day}T10:00:00"
                out.write(
                    f"{i + 1}|u{i % 50}|a{i % 7}|gpu|normal|{submit}|2024-01-0{day}T10:01:00|"
                    f"2024-01-0{day}T11:00:00|02:00:00|1|cpu=4,gres/gpu={1 + i % 8},mem=10G,node=1|"
                    "COMPLETED\n"
                )
        else:
            raise SystemExit(f"unknown format {format!r}: swf, philly or sacct")


def measure(path: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", READ, str(path)], capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--bad", type=int, default=200)
    parser.add_argument("--formats", default="swf,philly,sacct")
    args = parser.parse_args()
    bad = set(random.Random(2).sample(range(args.lines), args.bad))
    names = {"swf": "t.swf", "philly": "t.csv", "sacct": "t.sacct"}
    with tempfile.TemporaryDirectory(prefix="gpuplan-bench-") as folder:
        for format in args.formats.split(","):
            row = []
            for label, which in (("clean", set()), (f"{args.bad:,} bad", bad)):
                path = Path(folder) / f"{label.replace(' ', '-').replace(',', '')}-{names[format]}"
                write_trace(path, format, args.lines, which)
                figures = measure(path)
                path.unlink()
                row.append(f"{label}: {figures['seconds']:.2f} s, {figures['peak_mb']:.0f} MB")
                assert figures["jobs"] == args.lines - len(which) and figures["skipped"] == len(which)
            print(f"{format:7} {args.lines:,} lines  " + "  |  ".join(row), flush=True)


if __name__ == "__main__":
    main()
