"""``OUT/manifest.json``: what one run wrote, written last (DESIGN.md "Results").

A command writes its files into a stage and the manifest last (``gpuplan.results.transaction``: the
stage then replaces OUT as a whole, so a report or recommendation of an earlier run never sits
beside new figures): the gpuplan version, the command, the scenario, the input files with their
SHA-256, the models, whether the result is partial (an interrupted comparison), and every file with
its SHA-256. A file whose hash differs was changed after the run. ``gpuplan report`` checks all of
this before it reads anything (``check``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpuplan import __version__
from gpuplan.errors import InputError
from gpuplan.inputs import Input, input_files
from gpuplan.results.files import write_json

MANIFEST = "manifest.json"
CHUNK = 1 << 20


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while chunk := data.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Run:
    """What a run was: the command, its input and the models it simulated."""

    command: str
    scenario: str | None  # the scenario's name; None for a trace
    input: str | None  # the input as given on the command line
    inputs: dict[str, str]  # every input file read (scenario, traces, demand curves) -> SHA-256
    models: list[str]
    partial: dict[str, Any] | None = None  # {"missing_models": [...], "why": "interrupted"}
    gpuplan_version: str = __version__
    sets: list[str] = field(default_factory=list)  # the scenario's fields changed (--set PATH=VALUE)


@dataclass(frozen=True)
class Manifest:
    run: Run
    files: dict[str, str] = field(default_factory=dict)  # file name in OUT -> SHA-256

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self.run), "files": self.files}


def input_hashes(paths: Iterable[Path]) -> dict[str, str]:
    """SHA-256 of each input file that exists (a missing one was reported when it was read)."""
    return {str(path): sha256(path) for path in dict.fromkeys(paths) if path.is_file()}


def describe_run(command: str, loaded: Input, path: Path, models: Sequence[str]) -> Run:
    """The manifest's record of a run of ``command`` on ``loaded`` (read from ``path``)."""
    return Run(
        command=command,
        scenario=loaded.scenario.scenario.name if loaded.scenario is not None else None,
        input=str(path),
        inputs=input_hashes(input_files(loaded)),
        models=list(models),
        sets=[] if loaded.scenario is None else [override.text for override in loaded.scenario.overrides],
    )


def read(out: Path) -> Manifest | None:
    """The manifest of ``out``; None when it has none. A manifest that cannot be read is an error."""
    path = out / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a readable manifest ({exc})", path=path) from None
    try:
        files = data.pop("files")
        run = Run(**data)
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise TypeError("files must map names to hashes")
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"not a gpuplan manifest ({exc})", path=path) from None
    return Manifest(run, files)


def read_or_none(out: Path) -> Manifest | None:
    try:
        return read(out)
    except InputError:
        return None  # an unreadable manifest is replaced


def finish(out: Path, run: Run, files: Sequence[Path]) -> Path:
    """Write the manifest of ``files`` (all in ``out``), last."""
    names = {path.name: sha256(path) for path in files if path.parent.resolve() == out.resolve()}
    return write_json(out / MANIFEST, Manifest(run, dict(sorted(names.items()))).to_json())


def check(out: Path, required: Sequence[str]) -> Manifest:
    """The manifest of ``out`` after checking that every ``required`` file is one the run wrote."""
    manifest = read(out)
    if manifest is None:
        raise InputError(
            "no manifest.json: the run that wrote this directory did not finish (interrupted?), or it "
            "is not a gpuplan results directory; run the command again",
            path=out,
        )
    for name in required:
        path = out / name
        if name not in manifest.files:
            raise InputError(f"not written by the run of {MANIFEST} ({manifest.run.command})", path=path)
        if not path.is_file():
            raise InputError(f"missing, though {MANIFEST} lists it: run the command again", path=path)
        if sha256(path) != manifest.files[name]:
            raise InputError(
                f"changed since the run that wrote {MANIFEST} ({manifest.run.command}): "
                "run the command again",
                path=path,
            )
    return manifest


def matches(out: Path, manifest: Manifest, name: str) -> bool:
    """Whether ``name`` in ``out`` is the file the manifest's run wrote."""
    path = out / name
    return name in manifest.files and path.is_file() and sha256(path) == manifest.files[name]
