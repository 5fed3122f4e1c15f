"""Fuzzing every input kind through ``gpuplan validate``, ``inspect`` and ``simulate``.

Each example takes a seed (a valid file from tests/data, tests/data/fuzz or examples/, with the files it
names beside it), applies zero to three mutations chosen by hypothesis (structure-aware: a hostile value
in a cell, field or key, rows, columns and keys deleted, duplicated or renamed, an alias bomb, duplicate
keys; or byte-level: truncation, garbage, other encodings), writes the files into a fresh directory
(sometimes one whose name is Rich markup) and runs one command on them in a forked child (see
fuzzing.py). Every run must: exit 0, 1 or 2; print no traceback and no Python warning; name the file and
a line or field in every exit-2 message; print valid JSON for ``--json``; end within
``GPUPLAN_FUZZ_SECONDS`` (20 s) and ``GPUPLAN_FUZZ_MEMORY_MB`` (1024 MB) more resident memory than the
warm test process.

Normal runs are deterministic (``derandomize=True``, which implies no example database: CI runs the same
examples every time, and a failure reproduces with the same command) and small (``EXAMPLES`` per kind).
Each failure class raises its own exception type, so hypothesis shrinks and reports every distinct class
it finds, not just the first; shrinking is capped (``SHRINK_SECONDS``) so a failing suite stays bounded.

Long campaigns, locally:

    GPUPLAN_FUZZ_EXAMPLES=2000 pytest tests/cli/test_fuzz.py      # random seeds, example database on
    GPUPLAN_FUZZ_EXAMPLES=2000 GPUPLAN_FUZZ_SURVEY=survey.jsonl pytest tests/cli/test_fuzz.py
    python tests/fuzzing.py survey.jsonl                          # every failure class, smallest input

A survey logs every failing run and keeps going (it never stops at the first failure), to list the
failure classes of a campaign; it is a tool for that listing, never what CI runs.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import importlib
import json
import os
import re
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import typer
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

# The commands import their libraries lazily; import them here, once, so each forked child starts warm
# (a cold child spends 0.3 s importing pyarrow.compute and friends, a warm one runs in 0.06 s).
import gpuplan.cli
import gpuplan.inputs
import gpuplan.inspect
import gpuplan.scenario.load
import gpuplan.scenario.shapes
import gpuplan.simulate  # noqa: F401
from fuzzing import (
    CSV,
    SACCT,
    SWF,
    Failure,
    Table,
    check_run,
    describe,
    locate_problem,
    mutate_bytes,
    mutate_gzip,
    mutate_json,
    mutate_table,
    mutate_yaml,
    run_isolated,
)

from builders import ROOT

for _module in ("numpy.ma", "numpy.random", "pyarrow.compute", "pyarrow.csv", "pyarrow.parquet", "pydantic"):
    importlib.import_module(_module)

# The runner forks and reads the child's memory from /proc.
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fuzz runner needs Linux")

TESTS = ROOT / "tests"
DATA = TESTS / "data"
FUZZ = DATA / "fuzz"
EXAMPLES = TESTS.parent / "examples"

CAMPAIGN_EXAMPLES = int(os.environ.get("GPUPLAN_FUZZ_EXAMPLES", "0"))
SECONDS = float(os.environ.get("GPUPLAN_FUZZ_SECONDS", "20"))
MEMORY_BYTES = int(float(os.environ.get("GPUPLAN_FUZZ_MEMORY_MB", "1024")) * 2**20)
SURVEY = os.environ.get("GPUPLAN_FUZZ_SURVEY")
SHRINK_SECONDS = 30  # per test, in normal runs; hypothesis's own cap (300 s) in campaigns

# Directory names the files are written under: a path is user text too, printed in every message.
DIRECTORY_NAMES = ("plain", "with space", "[red]", "[/x]", ":100:", "名前")


@dataclass(frozen=True)
class Seed:
    """Files written side by side; the first is the command's input. ``sources`` maps each file name
    to the file whose content it starts from (a ``.gz`` source is read decompressed; a target name
    ending in ``.gz`` is written compressed)."""

    sources: tuple[tuple[str, Path], ...]
    lines: int | None = None  # keep only the first lines of the input (a large seed, cut to size)

    @property
    def name(self) -> str:
        return self.sources[0][0]


def seed(*names: str | tuple[str, Path], lines: int | None = None) -> Seed:
    return Seed(tuple((n, DATA / n) if isinstance(n, str) else n for n in names), lines)


def _syntax_of(name: str) -> Callable[..., str] | Table:
    bare = name.removesuffix(".gz")
    if bare.endswith((".yaml", ".yml")):
        return mutate_yaml
    if bare.endswith(".json"):
        return mutate_json
    if bare.endswith(".swf"):
        return SWF
    if bare.endswith(".txt"):
        return SACCT
    return CSV


def mutate_content(data: st.DataObject, name: str, text: str) -> bytes:
    """Zero to three mutations of one file's text, structure-aware for its syntax or byte-level."""
    content = text.encode()
    syntax = _syntax_of(name)
    for _ in range(data.draw(st.integers(0, 3), label=f"mutations of {name}")):
        if data.draw(st.booleans(), label="byte-level"):
            content = mutate_bytes(data, content)
            continue
        text = content.decode("utf-8", errors="replace")
        try:
            text = mutate_table(data, text, syntax) if isinstance(syntax, Table) else syntax(data, text)
        except (ValueError, RecursionError, yaml.YAMLError):
            # an earlier byte-level mutation left nothing this syntax can parse: mutate the bytes
            content = mutate_bytes(data, content)
            continue
        content = text.encode("utf-8", errors="surrogatepass")
    return content


@dataclass(frozen=True)
class Kind:
    """An input kind: its seeds and the commands a user would run on it."""

    name: str
    seeds: tuple[Seed, ...]
    commands: Callable[[st.DataObject, Path, Path], list[str]]
    examples: int  # per normal run


def scenario_commands(data: st.DataObject, path: Path, out: Path) -> list[str]:
    command = data.draw(st.sampled_from(("validate", "inspect", "simulate")), label="command")
    if command == "validate":
        return ["validate", str(path)]
    args = [command, str(path), "--out", str(out)]
    if command == "simulate":
        model = data.draw(st.sampled_from(("slurm", "kubernetes", "hybrid")), label="model")
        args += ["--model", model]
    if data.draw(st.booleans(), label="--json"):
        args.append("--json")
    return args


def trace_commands(format: str, models: tuple[str, ...]) -> Callable[[st.DataObject, Path, Path], list[str]]:
    def commands(data: st.DataObject, path: Path, out: Path) -> list[str]:
        command = data.draw(st.sampled_from(("inspect", "simulate")), label="command")
        args = [command, str(path), "--out", str(out)]
        if command == "simulate":
            args += ["--model", data.draw(st.sampled_from(models), label="model")]
        if data.draw(st.booleans(), label="--format"):
            args += ["--format", format]
        for flag in ("--skip-bad-lines", "--json"):
            if data.draw(st.booleans(), label=flag):
                args.append(flag)
        return args

    return commands


SCENARIO_SEEDS = (
    seed(("slurm-policies.yaml", FUZZ / "slurm-policies.yaml"), ("small.swf", FUZZ / "small.swf")),
    seed(("kubernetes-kueue.yaml", FUZZ / "kubernetes-kueue.yaml"), ("demand.csv", FUZZ / "demand.csv")),
    *(seed(p.name) for p in sorted(DATA.glob("*.yaml"))),
    *(seed((p.name, p)) for p in sorted(EXAMPLES.glob("*.yaml")) if p.name != "mixed-org.yaml"),
)

KINDS = {
    kind.name: kind
    for kind in (
        Kind("scenario", SCENARIO_SEEDS, scenario_commands, examples=80),
        Kind(
            "scenario_with_trace",
            (
                seed(("hybrid-trace.yaml", FUZZ / "hybrid-trace.yaml"), ("small.swf", FUZZ / "small.swf")),
                seed(
                    ("mixed-org.yaml", EXAMPLES / "mixed-org.yaml"),
                    ("philly_vc11cb48_week.csv.gz", EXAMPLES / "philly_vc11cb48_week.csv.gz"),
                ),
            ),
            scenario_commands,
            examples=25,
        ),
        Kind(
            "swf",
            (
                seed(("small.swf", FUZZ / "small.swf")),
                # its first 400 jobs: the Kubernetes model takes 7 s on all 2,000
                seed(("lublin_256_first400.swf", EXAMPLES / "lublin_256_first2000.swf.gz"), lines=407),
            ),
            trace_commands("swf", ("slurm", "kubernetes")),
            examples=40,
        ),
        Kind(
            "swf_gz",
            (
                seed(("small.swf.gz", FUZZ / "small.swf")),
                seed(("lublin_256_first400.swf.gz", EXAMPLES / "lublin_256_first2000.swf.gz"), lines=407),
            ),
            trace_commands("swf", ("slurm", "kubernetes")),
            examples=40,
        ),
        Kind(
            "sacct",
            (seed("sacct_awkward.txt"), seed("sacct_gpusim_22.05_slice.txt")),
            trace_commands("sacct", ("slurm", "kubernetes")),
            examples=40,
        ),
        Kind(
            "philly",
            (
                seed("philly_jobs_adaptdl_head60.csv"),
                seed(("philly_vc11cb48_week.csv.gz", EXAMPLES / "philly_vc11cb48_week.csv.gz")),
            ),
            trace_commands("philly", ("slurm", "kubernetes")),
            examples=40,
        ),
        Kind(
            "chronus",
            (seed("philly_chronus_mix1_rows180-219.csv"),),
            trace_commands("chronus", ("slurm", "kubernetes")),
            examples=40,
        ),
        Kind(
            "helios",
            (seed("helios_cluster_log.csv"),),
            trace_commands("helios", ("slurm", "kubernetes")),
            examples=40,
        ),
        Kind(
            "acme",
            (seed("acme_trace_kalos.csv"), seed("acme_trace_seren.csv")),
            trace_commands("acme", ("slurm", "kubernetes")),
            examples=40,
        ),
        Kind(
            "alibaba",
            (seed("k8s_alibaba_pod_list_sample.csv", "k8s_alibaba_node_list_gpu_node.csv"),),
            trace_commands("alibaba", ("kubernetes", "kubernetes", "slurm")),
            examples=40,
        ),
        Kind(
            "kubectl",
            (seed("k8s_kubectl_pods.json"),),
            trace_commands("kubectl", ("kubernetes", "kubernetes", "slurm")),
            examples=40,
        ),
    )
}


def read_seed(source: Path) -> str:
    raw = source.read_bytes()
    return (gzip.decompress(raw) if source.name.endswith(".gz") else raw).decode("utf-8")


class FuzzFailure(AssertionError):
    """A broken promise of the CLI; one subclass per failure class (see ``failure_type``)."""


_FAILURE_TYPES: dict[str, type[FuzzFailure]] = {}


def failure_type(key: str) -> type[FuzzFailure]:
    """An exception type of its own for each failure class: hypothesis tells bugs apart by the type
    (and place) of what they raise, so each class is shrunk and reported on its own."""
    if key not in _FAILURE_TYPES:
        name = "Fuzz_" + re.sub(r"\W+", "_", key).strip("_")[:80]
        _FAILURE_TYPES[key] = type(name, (FuzzFailure,), {})
    return _FAILURE_TYPES[key]


def fuzz(kind: Kind, data: st.DataObject) -> None:
    chosen = data.draw(st.sampled_from(kind.seeds), label="seed")
    mutated = data.draw(st.integers(0, len(chosen.sources) - 1), label="file mutated")
    directory_name = data.draw(st.sampled_from(DIRECTORY_NAMES), label="directory")
    with tempfile.TemporaryDirectory(prefix="gpuplan-fuzz-") as scratch:
        root = Path(scratch) / directory_name
        root.mkdir(parents=True)  # "[/x]" is two directories: "[" and "x]"
        written: dict[str, bytes] = {}
        for index, (name, source) in enumerate(chosen.sources):
            text = read_seed(source)
            if index == 0 and chosen.lines is not None:
                text = "".join(text.splitlines(keepends=True)[: chosen.lines])
            content = mutate_content(data, name, text) if index == mutated else text.encode()
            if name.endswith(".gz"):
                content = gzip.compress(content, mtime=0)
                if index == mutated:
                    content = mutate_gzip(data, content)
            (root / name).write_bytes(content)
            written[str(root / name)] = content
        out = Path(scratch) / "out"
        args = kind.commands(data, root / chosen.name, out)
        run = run_isolated(args, Path(scratch), seconds=SECONDS, memory_bytes=MEMORY_BYTES)
        texts = {path: _text_of(path, content) for path, content in written.items()}
        failures = check_run(run, texts, seconds=SECONDS, memory_mb=MEMORY_BYTES / 2**20)
        if not failures:
            return
        report = describe(run, written, failures)
        if SURVEY:
            _log_survey(kind, args, failures, written, report)
            return
        raise failure_type(failures[0].key)(report)


def _text_of(path: str, content: bytes) -> str:
    if path.endswith(".gz"):
        with contextlib.suppress(OSError, EOFError, zlib.error):
            content = gzip.decompress(content)
    return content.decode("utf-8", errors="replace")


def _log_survey(
    kind: Kind, args: list[str], failures: list[Failure], written: dict[str, bytes], report: str
) -> None:
    entry = {
        "kind": kind.name,
        "keys": sorted({failure.key for failure in failures}),
        "details": [[failure.key, failure.detail] for failure in failures],
        "size": sum(len(content) for content in written.values()),
        "report": report,
        "args": args,  # with the files below, the exact run again
        "files": {path: base64.b64encode(content).decode() for path, content in written.items()},
    }
    with open(SURVEY, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


def fuzz_settings(kind: str) -> settings:
    common = {
        "deadline": None,  # the runner bounds each run itself (SECONDS), and kills it
        # no "explain" phase: it reruns a failure under a line tracer to list the lines only failing
        # runs reach, which here are the harness's own; the report says what failed
        "phases": (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
        "print_blob": True,
    }
    if CAMPAIGN_EXAMPLES:
        return settings(max_examples=CAMPAIGN_EXAMPLES, **common)
    return settings(max_examples=KINDS[kind].examples, derandomize=True, **common)


@pytest.fixture(scope="module", autouse=True)
def _bounded_shrinking() -> Iterator[None]:
    """Cap the time hypothesis spends shrinking a failure in normal runs: a failing suite must stay
    within CI's budget. Hypothesis has no setting for it, so its module constant is lowered for this
    module's tests (its warning when the cap is reached still says "five minutes"); if a future
    hypothesis drops the constant this does nothing, and shrinking keeps its own 300 s cap."""
    from hypothesis.internal.conjecture import engine

    saved = getattr(engine, "MAX_SHRINKING_SECONDS", None)
    if saved is not None and not CAMPAIGN_EXAMPLES:
        engine.MAX_SHRINKING_SECONDS = SHRINK_SECONDS
    yield
    if saved is not None:
        engine.MAX_SHRINKING_SECONDS = saved


@fuzz_settings("scenario")
@given(data=st.data())
def test_scenario_yaml(data: st.DataObject) -> None:
    fuzz(KINDS["scenario"], data)


@fuzz_settings("scenario_with_trace")
@given(data=st.data())
def test_scenario_replaying_a_trace(data: st.DataObject) -> None:
    fuzz(KINDS["scenario_with_trace"], data)


@fuzz_settings("swf")
@given(data=st.data())
def test_swf(data: st.DataObject) -> None:
    fuzz(KINDS["swf"], data)


@fuzz_settings("swf_gz")
@given(data=st.data())
def test_swf_gz(data: st.DataObject) -> None:
    fuzz(KINDS["swf_gz"], data)


@fuzz_settings("sacct")
@given(data=st.data())
def test_sacct_parsable2(data: st.DataObject) -> None:
    fuzz(KINDS["sacct"], data)


@fuzz_settings("philly")
@given(data=st.data())
def test_philly_csv(data: st.DataObject) -> None:
    fuzz(KINDS["philly"], data)


@fuzz_settings("chronus")
@given(data=st.data())
def test_chronus_csv(data: st.DataObject) -> None:
    fuzz(KINDS["chronus"], data)


@fuzz_settings("helios")
@given(data=st.data())
def test_helios_csv(data: st.DataObject) -> None:
    fuzz(KINDS["helios"], data)


@fuzz_settings("acme")
@given(data=st.data())
def test_acme_csv(data: st.DataObject) -> None:
    fuzz(KINDS["acme"], data)


@fuzz_settings("alibaba")
@given(data=st.data())
def test_alibaba_pod_and_node_lists(data: st.DataObject) -> None:
    fuzz(KINDS["alibaba"], data)


@fuzz_settings("kubectl")
@given(data=st.data())
def test_kubectl_pods_json(data: st.DataObject) -> None:
    fuzz(KINDS["kubectl"], data)


# ---- the harness itself: it must see each broken promise it is there to catch ------------------------

harness_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@harness_app.command()
def behave(what: str) -> None:
    """Misbehave as asked, for the runner's and the checks' own tests."""
    if what == "sleep":
        time.sleep(120)
    elif what == "allocate":
        buffers = []
        for _ in range(64):  # 16 GiB, each page written (so resident), far past the bound
            buffers.append(b"\x01" * 2**28)
    elif what == "raise":
        raise KeyError("boom")
    elif what == "warn":
        print(np.log(np.zeros(1)))  # RuntimeWarning: divide by zero
    elif what == "exit3":
        raise typer.Exit(3)
    elif what == "unlocated":
        typer.echo("error: bad.csv: cannot read: boom", err=True)
        raise typer.Exit(2)
    elif what == "located":
        typer.echo("error: bad.csv:3: num_gpu: expected a whole number", err=True)
        raise typer.Exit(2)


def harness(tmp_path: Path, what: str, seconds: float = 20, memory_bytes: int = MEMORY_BYTES) -> list[str]:
    run = run_isolated([what], tmp_path, seconds=seconds, memory_bytes=memory_bytes, app=harness_app)
    inputs = {str(tmp_path / "bad.csv"): "a,b\n"}
    failures = check_run(run, inputs, seconds=seconds, memory_mb=memory_bytes / 2**20)
    return [failure.key for failure in failures]


def test_a_run_past_its_bound_is_killed_and_fails(tmp_path: Path) -> None:
    start = time.monotonic()
    assert harness(tmp_path, "sleep", seconds=1) == ["ran longer than 1 s"]
    assert time.monotonic() - start < 10


def test_a_run_past_its_memory_bound_fails(tmp_path: Path) -> None:
    start = time.monotonic()
    assert harness(tmp_path, "allocate", memory_bytes=256 * 2**20) == ["used more than 256 MB of memory"]
    assert time.monotonic() - start < 10


def test_tracebacks_warnings_and_odd_exit_codes_fail(tmp_path: Path) -> None:
    assert harness(tmp_path, "raise") == ["traceback: KeyError in test_fuzz.py:behave"]
    assert harness(tmp_path, "warn")[0].startswith(
        "warning reaches the user: RuntimeWarning: divide by zero encountered in log"
    )
    assert harness(tmp_path, "exit3") == ["exit code 3"]
    assert harness(tmp_path, "unlocated") == ["exit-2 message names the file but no line or field"]
    assert harness(tmp_path, "located") == []


@pytest.mark.parametrize(
    ("message", "lack"),
    [
        ("/d/bad.csv:12: num_gpu: expected a number", None),
        ("bad.csv: num_gpu: must not be negative", None),
        ("/d/bad.csv:7: field 4 (run time): expected a number, got 'x'", None),
        ("/d/bad.csv: --gpus-per-node: smaller than one node", None),
        ("/d/bad.csv: cannot read: not a gzip file", "names the file but no line or field"),
        ("/d/bad.csv💯 num_gpu: expected a number", "names the file but no line or field"),
        ("num_gpu: expected a number", "names no input file"),
    ],
)
def test_exit_2_messages_must_name_file_and_line_or_field(message: str, lack: str | None) -> None:
    assert locate_problem(message, {"/d/bad.csv": "num_gpu,duration\n"}) == lack
