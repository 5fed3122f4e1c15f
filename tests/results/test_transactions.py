"""Issue 43, item 1: a result directory is one transaction (docs/results.md "One run at a time").

Whatever stops ``compare`` or ``recommend`` (SIGINT, SIGTERM or SIGKILL while the models run, while
the files are written, while the report is built, just before the result is put in place; a full
disk), OUT holds afterwards either the previous complete result or the new complete one: every file
the manifest lists, with its hash, and none it does not list; a rerun leaves no temporary; no worker
outlives the command. The commands wait at each point when asked (GPUPLAN_PAUSE_AT, a test hook), so
the signal lands there whatever this machine's speed.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuplan.errors import InputError, Interrupted
from gpuplan.results import manifest, transaction
from gpuplan.results.files import write_text
from gpuplan.results.transaction import open_stage, recover

from builders import default_sigint, gpuplan, session_processes, small_scenario


def snapshot(out: Path) -> dict[str, str]:
    """Every file in OUT (recursively) with its SHA-256."""
    return {
        str(path.relative_to(out)): manifest.sha256(path) for path in sorted(out.rglob("*")) if path.is_file()
    }


def assert_complete(out: Path) -> manifest.Manifest:
    """OUT holds one run's whole result: its manifest, every file it lists with that hash, and
    nothing else of gpuplan's."""
    written = manifest.read(out)
    assert written is not None, sorted(p.name for p in out.iterdir())
    own = {p.name for p in out.iterdir() if p.name in transaction.OWN_FILES}
    assert own == {*written.files, manifest.MANIFEST}, own ^ {*written.files, manifest.MANIFEST}
    for name, digest in written.files.items():
        assert manifest.sha256(out / name) == digest, name
    return written


def leftovers(out: Path) -> list[str]:
    """Stages, old copies and temporaries of runs on OUT."""
    beside = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.gpuplan-")]
    inside = [p.name for p in out.iterdir() if p.name.endswith(".tmp")] if out.is_dir() else []
    return beside + inside


# ---- the stage, in this process -----------------------------------------------------------------


def test_a_stage_replaces_the_result_and_carries_what_is_not_gpuplan_s(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with open_stage(out) as stage:
        files = [write_text(stage.dir / "summary.json", "{}\n"), write_text(stage.dir / "report.md", "old\n")]
        manifest.finish(stage.dir, manifest.Run("compare", "x", "x.yaml", {}, ["slurm"]), files)
    assert stage.final(files) == [out / "summary.json", out / "report.md"]
    (out / "notes.txt").write_text("mine")  # a user's file, and a sweep's point store
    (out / "points").mkdir()
    (out / "points" / "a.json").write_text("{}")
    with open_stage(out) as stage:
        files = [write_text(stage.dir / "summary.json", "{}\n")]
        manifest.finish(stage.dir, manifest.Run("simulate", "x", "x.yaml", {}, ["slurm"]), files)
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "notes.txt", "points", "summary.json"]
    assert (out / "points" / "a.json").read_text() == "{}"  # the previous report.md is gone
    assert_complete(out)
    assert leftovers(out) == []


@pytest.mark.parametrize("exchange", [True, False])
def test_a_failed_or_interrupted_run_leaves_the_previous_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    if not exchange:  # where renameat2 cannot swap: two renames
        monkeypatch.setattr(transaction, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    with open_stage(out) as stage:
        manifest.finish(stage.dir, manifest.Run("simulate", "a", "a.yaml", {}, []), [])
    before = snapshot(out)
    for stop in (KeyboardInterrupt(), OSError(errno.ENOSPC, "No space left on device"), Interrupted("x")):
        with pytest.raises(type(stop)), open_stage(out) as stage:
            write_text(stage.dir / "summary.json", "new\n")
            raise stop
        assert snapshot(out) == before and leftovers(out) == []
    # a partial result, marked as such, is a result: it replaces the previous one
    with pytest.raises(Interrupted), open_stage(out) as stage:
        manifest.finish(stage.dir, manifest.Run("compare", "b", "b.yaml", {}, [], partial={"why": "x"}), [])
        raise Interrupted("interrupted: wrote slurm", kept=True)
    assert assert_complete(out).run.partial == {"why": "x"}
    assert leftovers(out) == []


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_rerun_finishes_what_a_killed_run_left(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("previous")
    dead = _dead_pid()
    # killed between the two renames of a swap: OUT is missing, the previous result sits aside
    out.rename(tmp_path / f".out.gpuplan-old-{dead}")
    (tmp_path / f".out.gpuplan-new-{dead}").mkdir()  # and a stage it never put in place
    recover(out)
    assert (out / "summary.json").read_text() == "previous"
    assert leftovers(out) == []
    (out / f".jobs.parquet.{dead}.tmp").write_text("half")  # a file write killed midway
    (out / "points").mkdir()  # and a point of a sweep's store
    (out / "points" / f".a.json.{dead}.tmp").write_text("half")
    recover(out)
    assert sorted(p.name for p in out.iterdir()) == ["points", "summary.json"]
    assert list((out / "points").iterdir()) == []


def test_unwritable_out_is_exit_2_naming_the_path(tmp_path: Path) -> None:
    scenario_file = small_scenario(tmp_path, "small")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    code, _, err = gpuplan("simulate", str(scenario_file), "--out", str(a_file), "-q")
    assert code == 2 and f"{a_file}: --out: is not a directory" in err
    code, _, err = gpuplan("simulate", str(scenario_file), "--out", str(a_file / "out"), "-q")
    assert code == 2 and str(a_file) in err and "Traceback" not in err
    cwd = Path.cwd()
    try:
        os.chdir(tmp_path)
        code, _, err = gpuplan("simulate", str(scenario_file), "--out", ".", "-q")
    finally:
        os.chdir(cwd)
    assert code == 2 and "holds the current directory" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory (see the mount test)")
def test_a_read_only_out_is_exit_2_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert gpuplan("simulate", str(small_scenario(tmp_path, "small")), "--out", str(out), "-q")[0] == 0
    before = snapshot(out)
    out.chmod(0o555)
    try:
        code, _, err = gpuplan("simulate", str(small_scenario(tmp_path, "small")), "--out", str(out), "-q")
        assert code == 2 and f"{out}: --out: is not writable" in err
        code, _, err = gpuplan("report", str(out))
        assert code == 2 and f"{out}: --out: is not writable" in err and "Traceback" not in err
    finally:
        out.chmod(0o755)
    assert snapshot(out) == before


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 600 KB tmpfs at tmp_path/disk (root only: skipped elsewhere)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or not _mount("-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)):
        pytest.skip("needs root and mount to make a small file system")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_leaves_the_previous_result(tmp_path: Path, small_disk: Path) -> None:
    """A real full disk (tmpfs): the run fails with exit 2 naming the file it could not write; the
    previous result stands, whole; nothing of the failed run is left."""
    out = small_disk / "out"
    assert gpuplan("simulate", str(small_scenario(tmp_path, "small")), "--out", str(out), "-q")[0] == 0
    before = snapshot(out)
    (small_disk / "filler").write_bytes(
        b"\0" * (600 * 1024 - 2 * sum(p.stat().st_size for p in out.iterdir()))
    )
    code, _, err = gpuplan(
        "recommend", str(small_scenario(tmp_path, "small")), "--out", str(out), "--processes", "1", "-q"
    )
    assert code == 2 and "No space left on device" in err and "Traceback" not in err
    assert snapshot(out) == before and leftovers(out) == []
    assert_complete(out)


def test_a_read_only_file_system_is_exit_2(tmp_path: Path, small_disk: Path) -> None:
    out = small_disk / "out"
    assert gpuplan("simulate", str(small_scenario(tmp_path, "small")), "--out", str(out), "-q")[0] == 0
    before = snapshot(out)
    assert _mount("-o", "remount,ro", str(small_disk))
    code, _, err = gpuplan("simulate", str(small_scenario(tmp_path, "small")), "--out", str(out), "-q")
    assert code == 2 and "--out" in err and "Traceback" not in err
    code, _, err = gpuplan("report", str(out))
    assert code == 2 and "--out" in err and "Traceback" not in err
    assert snapshot(out) == before


def test_a_write_failing_midway_leaves_the_previous_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on any machine: the second of a run's Parquet files fails as on a full disk."""
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    assert gpuplan(
        "recommend", str(small_scenario(tmp_path, "alpha")), "--out", str(out), "--processes", "1", "-q"
    )[0] in (
        0,
        1,
    )
    before = snapshot(out)
    real = pq.write_table
    calls: list[str] = []

    def full_disk_at_the_second(table: object, where: object, *args: object, **kwargs: object) -> None:
        calls.append(str(where))
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", full_disk_at_the_second)
    code, _, err = gpuplan(
        "compare", str(small_scenario(tmp_path, "beta")), "--out", str(out), "--processes", "1", "-q"
    )
    assert code == 2 and "No space left on device" in err
    assert snapshot(out) == before and leftovers(out) == []
    monkeypatch.setattr(pq, "write_table", real)
    assert (
        gpuplan(
            "compare", str(small_scenario(tmp_path, "beta")), "--out", str(out), "--processes", "1", "-q"
        )[0]
        == 0
    )
    assert assert_complete(out).run.scenario == "beta" and leftovers(out) == []


# ---- signals at each phase, to the real command -----------------------------------------------------


FAST = ("--seeds", "1", "--processes", "2", "-q")
PHASES = {
    "compare": ("models", "write", "commit"),
    "recommend": ("models", "write", "report", "commit"),
}
CASES = [
    (command, phase, signum)
    for command, phases in PHASES.items()
    for phase in phases
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize(
    ("command", "phase", "signum"), CASES, ids=[f"{c}-{p}-{s.name}" for c, p, s in CASES]
)
def test_a_signal_at_any_phase_leaves_one_whole_result(
    tmp_path: Path, command: str, phase: str, signum: signal.Signals
) -> None:
    out = tmp_path / "out"
    assert gpuplan("simulate", str(small_scenario(tmp_path, "previous")), "--out", str(out), "-q")[0] == 0
    before = snapshot(out)
    pause = tmp_path / "paused"
    env = {**os.environ, transaction.PAUSE_AT: phase, transaction.PAUSE_FILE: str(pause)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpuplan",
            command,
            str(small_scenario(tmp_path, "next")),
            "--out",
            str(out),
            *FAST,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 120
        while not pause.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, f"never reached {phase}"
            time.sleep(0.01)
        time.sleep(0.05)  # (the marker is written just before the wait)
        if signum == signal.SIGINT:
            os.killpg(process.pid, signum)  # Ctrl-C reaches the whole process group
        else:
            os.kill(process.pid, signum)
        _, err = process.communicate(timeout=60)
        text = err.decode()
        assert "Traceback" not in text, text
        assert process.returncode == (-signal.SIGKILL if signum == signal.SIGKILL else 130), text
        deadline = time.monotonic() + 10
        while (left := session_processes(process.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left == [], f"processes outlived the command: {left}"
        written = assert_complete(out)
        if phase == "models" and signum != signal.SIGKILL:
            # Ctrl-C or SIGTERM after a model finished: the models that finished, as a partial result
            assert written.run.scenario == "next" and written.run.command == command
            assert written.run.partial is not None and written.run.partial["why"] == "interrupted"
            assert "as a partial result" in text
        else:  # stopped before its result was in place: the previous one, as it was
            assert snapshot(out) == before
            assert signum == signal.SIGKILL or "nothing was written" in text, text
        # a rerun cleans up whatever the stopped run left
        assert gpuplan("simulate", str(small_scenario(tmp_path, "rerun")), "--out", str(out), "-q")[0] == 0
        assert leftovers(out) == [] and assert_complete(out).run.scenario == "rerun"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


def test_input_error_names_out_when_the_stage_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    out = tmp_path / "out"
    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(InputError, match=r"out: --out: .*Permission denied"), open_stage(out):
        pass
