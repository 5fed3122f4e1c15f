"""Issue 13, items 3 and 4: one manifest per results directory, written last; atomic files; `report`
refuses a directory whose files disagree; Ctrl-C keeps the models that finished; no worker outlives
the command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuplan.compare import CompareRequest, compare
from gpuplan.errors import InputError, Interrupted
from gpuplan.results import manifest
from gpuplan.results.files import RESULT_FILES, atomic_write, write_text

from builders import ROOT, default_sigint, gpuplan, session_processes
from builders import small_scenario as small

EXAMPLES = ROOT / "examples"

# ---- atomic files -----------------------------------------------------------------------------


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = write_text(tmp_path / "summary.json", "old\n")

    def half_then_fail(temporary: Path) -> None:
        temporary.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, half_then_fail)
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_an_unwritable_directory_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"summary\.json: cannot write"):
        write_text(tmp_path / "missing" / "summary.json", "x")


# ---- the manifest -----------------------------------------------------------------------------


def test_every_command_writes_a_manifest_of_its_files_last(tmp_path: Path) -> None:
    scenario = small(tmp_path)
    out = tmp_path / "out"
    assert gpuplan("simulate", str(scenario), "--out", str(out), "-q")[0] == 0
    written = manifest.read(out)
    assert written is not None and written.run.command == "simulate"
    assert written.run.scenario == "small" and written.run.models == ["slurm"]
    assert written.run.inputs == {str(scenario): manifest.sha256(scenario)}
    assert set(written.files) == {
        "summary.json",
        "jobs.parquet",
        "timeline.parquet",
        "events.parquet",
        "queues.parquet",
    }
    for name, digest in written.files.items():
        assert manifest.sha256(out / name) == digest
    # the manifest is the newest file: written after the files it lists
    assert all(
        (out / name).stat().st_mtime_ns <= (out / "manifest.json").stat().st_mtime_ns
        for name in written.files
    )


def test_report_never_mixes_runs(tmp_path: Path) -> None:
    """recommend, then simulate another scenario into the same --out, then report: the report is of the
    second run (the first run's recommendation and reports are gone), not a mix."""
    out = tmp_path / "out"
    first = small(tmp_path, "alpha-run")
    assert gpuplan("recommend", str(first), "--out", str(out), "--processes", "1", "-q")[0] in (0, 1)
    assert (out / "recommendation.json").exists() and (out / "report.html").exists()
    assert gpuplan("simulate", str(small(tmp_path, "beta-run")), "--out", str(out), "-q")[0] == 0
    assert not (out / "recommendation.json").exists() and not (out / "report.html").exists()
    code, _, _ = gpuplan("report", str(out))
    assert code in (0, 1)
    saved = json.loads((out / "recommendation.json").read_text())
    assert saved["scenario"] == "beta-run" and list(saved["scores"]) == ["slurm"]
    report = (out / "report.md").read_text()
    assert "beta-run" in report and "alpha-run" not in report
    assert set(manifest.read(out).files) >= {"report.html", "report.md", "recommendation.json"}  # type: ignore[union-attr]


def test_report_refuses_files_the_manifest_does_not_vouch_for(tmp_path: Path) -> None:
    out = tmp_path / "out"
    scenario = small(tmp_path)
    assert gpuplan("simulate", str(scenario), "--out", str(out), "-q")[0] == 0
    jobs = (out / "jobs.parquet").read_bytes()

    (out / "jobs.parquet").write_bytes(jobs[:-10])  # a file of another run, or a truncated one
    code, _, err = gpuplan("report", str(out))
    assert code == 2 and "jobs.parquet" in err and "changed since the run" in err
    (out / "jobs.parquet").write_bytes(jobs)

    foreign = tmp_path / "foreign.json"
    foreign.write_text("{}")
    (out / "recommendation.json").write_text("{}")  # not in the manifest: ignored, computed again
    code, _, err = gpuplan("report", str(out))
    assert code in (0, 1) and "is not from the run that wrote the results" in err

    scenario.write_text(scenario.read_text().replace("12/day", "13/day"))
    code, _, err = gpuplan("report", str(out))
    assert code == 2 and "small.yaml" in err and "changed since the run" in err

    (out / "manifest.json").unlink()
    code, _, err = gpuplan("report", str(out))
    assert code == 2 and "no manifest.json" in err and "did not finish" in err


# ---- interruption -----------------------------------------------------------------------------


@pytest.mark.parametrize("processes", [1, 2])
def test_ctrl_c_keeps_the_models_that_finished(tmp_path: Path, processes: int) -> None:
    finished: list[str] = []

    def interrupt_after_the_first(name: str) -> None:
        finished.append(name)
        raise KeyboardInterrupt

    request = CompareRequest(small(tmp_path), ("slurm", "kubernetes"), tmp_path / "out", processes, seeds=1)
    with pytest.raises(Interrupted, match=f"wrote {finished or ''}"):
        compare(request, interrupt_after_the_first)
    (done,) = finished
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    missing = [m for m in ("slurm", "kubernetes") if m != done]
    assert list(summary["models"]) == [done]
    assert summary["partial"] == {"missing_models": missing, "why": "interrupted"}
    written = manifest.read(tmp_path / "out")
    assert written is not None and written.run.partial == summary["partial"]
    # the partial result is still a report's input, which says it is partial
    code, _, err = gpuplan("report", str(tmp_path / "out"))
    assert code in (0, 1) and f"no figures for {missing[0]}" in err


LONG = """\
name: long
seed: 1
horizon: 30d
cluster:
  pools:
    - {name: h100, shape: BM.GPU.H100.8, nodes: 64}
teams:
  - {name: research}
workloads:
  - name: training
    kind: batch
    team: research
    arrival: {rate: 300/h}
    size: {"1x8": 50, "2x8": 30, "8x8": 20}
    duration: {median: 2h}
"""


def _cpu_s(pid: int) -> float:
    """CPU seconds a process has used (utime + stime, /proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_compare(tmp_path: Path) -> subprocess.Popen[bytes]:
    """A compare that runs for minutes, so that its workers are there to be signalled (the bundled
    example finishes in well under a second, sometimes before a test sees its workers)."""
    scenario = tmp_path / "long.yaml"
    scenario.write_text(LONG)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpuplan",
            "compare",
            str(scenario),
            "--out",
            str(tmp_path / "out"),
            "--seeds",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=default_sigint,
    )


@pytest.fixture
def started(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A compare in a session of its own; whatever the test does, nothing of it is left running."""
    process = _start_compare(tmp_path)
    yield process
    for pid in session_processes(process.pid):
        os.kill(pid, signal.SIGKILL)
    process.communicate()


def _wait_for_workers(process: subprocess.Popen[bytes], count: int) -> None:
    deadline = time.monotonic() + 60
    while len(session_processes(process.pid)) < 1 + count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no workers started"
        time.sleep(0.05)


@pytest.mark.skipif(
    not Path("/proc/self/stat").exists() or (os.cpu_count() or 1) < 2, reason="needs /proc and 2 cores"
)
def test_killing_compare_leaves_no_gpuplan_process(tmp_path: Path, started: subprocess.Popen[bytes]) -> None:
    process = started
    _wait_for_workers(process, 2)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 10
    while (left := session_processes(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], f"workers outlived a killed compare: {left}"
    assert manifest.read_or_none(tmp_path / "out") is None  # the unfinished run is not a result


@pytest.mark.skipif(
    not Path("/proc/self/stat").exists() or (os.cpu_count() or 1) < 2, reason="needs /proc and 2 cores"
)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_of_compare_ends_cleanly(
    tmp_path: Path, signum: int, started: subprocess.Popen[bytes]
) -> None:
    process = started
    _wait_for_workers(process, 2)
    os.killpg(process.pid, signum)  # Ctrl-C reaches the whole process group
    _, err = process.communicate(timeout=30)
    text = err.decode()
    assert process.returncode == 130
    assert "Traceback" not in text and text.strip().splitlines()[-1].startswith("interrupted")
    assert session_processes(process.pid) == []
    written = manifest.read_or_none(tmp_path / "out")
    if "nothing was written" in text:
        assert written is None
    else:  # a model had finished: a partial result
        assert written is not None and written.run.partial is not None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_ctrl_c_stops_a_long_simulation_inside_the_engine(tmp_path: Path) -> None:
    """The compiled engine looks for signals as it runs: this simulation takes about two minutes,
    Ctrl-C ends it at once."""
    scenario = tmp_path / "long.yaml"
    scenario.write_text(LONG)
    process = subprocess.Popen(
        [sys.executable, "-m", "gpuplan", "simulate", str(scenario), "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    try:
        # reading and synthesis take well under a CPU second: past 3, the engine is running (it needs
        # more than a minute for this scenario, so a faster engine still runs when the signal comes)
        deadline = time.monotonic() + 60
        while _cpu_s(process.pid) < 3.0:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert process.poll() is None
        sent = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=20)
        assert time.monotonic() - sent < 5
        assert process.returncode == 130 and err.decode().strip() == "interrupted: nothing was written"
        assert not (tmp_path / "out").exists()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


def test_a_rerun_after_a_killed_run_recovers(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = small(tmp_path, "alpha-run")
    assert gpuplan("recommend", str(first), "--out", str(out), "--processes", "1", "-q")[0] in (0, 1)
    # a run killed while writing: its manifest is gone, a half-written set of files remains
    (out / "manifest.json").unlink()
    (out / "jobs.parquet").write_bytes(b"")
    assert gpuplan("report", str(out))[0] == 2
    assert gpuplan("simulate", str(small(tmp_path, "beta-run")), "--out", str(out), "-q")[0] == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(["manifest.json", *RESULT_FILES])
    code, _, _ = gpuplan("report", str(out))
    assert code in (0, 1) and "beta-run" in (out / "report.md").read_text()
