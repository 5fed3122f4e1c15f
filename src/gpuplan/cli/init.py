"""``gpuplan init``: the questionnaire that writes a scenario file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.prompt import FloatPrompt, IntPrompt, Prompt

from gpuplan.cli.common import QuietOption, call, console, styled, warn


def init(
    path: Annotated[Path, typer.Option("--out", help="Scenario file to write.")] = Path("scenario.yaml"),
    answers: Annotated[
        Path | None,
        typer.Option(
            help="Answers as YAML or JSON (question: answer; the questions are listed in "
            "docs/init-answers.md); unanswered questions take defaults."
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace OUT if it exists.")] = False,
    quiet: QuietOption = False,
) -> None:
    """Ask the decision guide's questions and a rough workload mix; write a commented scenario file.

    Examples: gpuplan init --out my-platform.yaml;
    gpuplan init --answers answers.yaml --out my-platform.yaml (no questions asked)
    """
    from gpuplan.scenario.init import check_answers, read_answers, write_scenario

    out = console()
    if answers is not None:
        checked = call(lambda: read_answers(answers))
    else:
        checked = call(lambda: check_answers(ask(out), "your answers"))
    loaded = call(lambda: write_scenario(checked, path, overwrite=force))
    warn(loaded.warnings, quiet)
    if not quiet:
        gpus = sum(pool.gpus for pool in loaded.pools)
        out.print(
            f"wrote {path}: {len(loaded.pools)} pool(s), {gpus} GPUs, {len(loaded.scenario.teams)} team(s), "
            f"{len(loaded.scenario.workloads)} workload(s). Next: gpuplan recommend {path}",
            soft_wrap=True,
        )


def ask(out: Console) -> dict[str, Any]:
    """Each question of the questionnaire in turn, with its default; skips those that do not apply."""
    from gpuplan.scenario.init import QUESTIONS, answer_problem

    given: dict[str, Any] = {}
    for question in QUESTIONS:
        if question.when is not None and not question.when(given):
            continue
        while True:
            value = _prompt(out, question.text, question.kind(), question.default(), question.choices)
            problem = answer_problem(question.key, value)
            if problem is None:
                given[question.key] = value
                break
            out.print(styled((problem, "red")))
    return given


def _prompt(console: Console, text: str, kind: type, default: Any, choices: tuple[str, ...]) -> Any:
    if kind is int:
        return IntPrompt.ask(text, console=console, default=default)
    if kind is float:
        return FloatPrompt.ask(text, console=console, default=default)
    shown = len(choices) <= 6  # long lists (shapes) are checked, not printed
    return Prompt.ask(
        text, console=console, default=default, choices=list(choices) or None, show_choices=shown
    )
