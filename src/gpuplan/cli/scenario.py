"""``gpuplan validate SCENARIO...`` and ``gpuplan schema``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from gpuplan.cli.common import QuietOption, SetOption, error, user_errors, warn


def validate(
    scenarios: Annotated[list[Path], typer.Argument(help="Scenario files to check.")],
    set_: SetOption = None,
    quiet: QuietOption = False,
) -> None:
    """Check scenario files, and the workload lists they name: every problem is reported with its
    file, line and field; exit 2 if any.

    Example: gpuplan validate examples/*.yaml
    """
    from gpuplan.errors import GpuplanError
    from gpuplan.scenario.load import check_workload_lists, load_scenario
    from gpuplan.scenario.overrides import parse_overrides

    failed = False
    for path in scenarios:
        try:
            loaded = load_scenario(path, parse_overrides(set_ or ()))
            check_workload_lists(loaded)
        except GpuplanError as exc:
            failed = True
            error(str(exc))
            continue
        warn(loaded.warnings, quiet)
        if not quiet:
            scenario = loaded.scenario
            gpus = sum(pool.gpus for pool in loaded.pools)
            print(
                f"{path}: ok — {scenario.name}: {len(loaded.pools)} pool(s), {gpus} GPUs, "
                f"{len(scenario.teams)} team(s), {len(scenario.workloads)} workload(s)"
            )
    if failed:
        raise typer.Exit(2)


def schema(
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of stdout.")] = None,
) -> None:
    """Print the JSON Schema of scenario files, for editor completion and checks.

    Example: gpuplan schema --out gpuplan.schema.json
    """
    from gpuplan.atomic import atomic_write
    from gpuplan.scenario.model import Scenario

    text = json.dumps(Scenario.model_json_schema(), indent=2) + "\n"
    with user_errors():
        if out is None:
            sys.stdout.write(text)
        else:
            # whole or not at all: a full disk leaves the previous schema, not half of one that an
            # editor would then fail to read
            atomic_write(out, lambda temporary: temporary.write_text(text, encoding="utf-8"))
