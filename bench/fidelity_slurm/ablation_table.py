#!/usr/bin/env python3
"""Tabulate reference.py's ablation over several replays (each run by compare.py --ablate).

    python3 bench/fidelity_slurm/ablation_table.py RUN_DIR [RUN_DIR ...]

For each behaviour of reference.FEATURES: the agreement with the real replay when it is switched
off, minus the agreement with everything on (percentage points), per run and on average, sorted by
the average (largest drop first): the order of the README's "Semantics the engine must implement".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import reference  # noqa: E402


def main() -> int:
    runs = [Path(a) for a in sys.argv[1:]]
    if not runs:
        raise SystemExit(__doc__)
    tables = {}
    for run in runs:
        path = run / "ablation.json"
        if not path.exists():
            raise SystemExit(f"{path} missing: run compare.py {run} --ablate first")
        tables[run.name] = json.loads(path.read_text())
    names = list(tables)
    rows = []
    for feature in reference.FEATURES:
        drops = [100 * (tables[n].get(feature, tables[n]["ref"]) - tables[n]["ref"]) for n in names]
        rows.append((sum(drops) / len(drops), feature, drops))
    rows.sort()
    print("| behaviour switched off | " + " | ".join(names) + " | mean |")
    print("| --- |" + " ---: |" * (len(names) + 1))
    print(
        "| (none: agreement of ref) | "
        + " | ".join(f"{100 * tables[n]['ref']:.1f} %" for n in names)
        + " | |"
    )
    for mean, feature, drops in rows:
        print(f"| `{feature}` | " + " | ".join(f"{d:+.1f}" for d in drops) + f" | {mean:+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
