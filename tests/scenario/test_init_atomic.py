"""``gpuplan init`` and ``gpuplan schema --out`` write their file whole or not at all (issue 43, item 3).

A full disk once left a 0-byte scenario that the retry refused as "exists already", and ``--force``
truncated the old file before the new text existed. The text now goes to a temporary file beside the
target, is flushed, and replaces the target only once complete."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gpuplan.atomic import atomic_write, remove_stale_temporaries, temporary_of
from gpuplan.errors import InputError
from gpuplan.scenario.load import load_scenario

from builders import gpuplan

OLD = "# the previous scenario, to be kept whole\n"


def failing_midway(monkeypatch: pytest.MonkeyPatch, error: int) -> None:
    """Writing any text file writes half its text, then fails with ``error`` (a disk filling up)."""
    original = Path.write_text

    def write_text(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        original(self, data[: len(data) // 2], *args, **kwargs)
        raise OSError(error, os.strerror(error), str(self))

    monkeypatch.setattr(Path, "write_text", write_text)


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    """The answers every ``init`` here reads, written before any write is made to fail."""
    path = tmp_path / "answers.yaml"
    path.write_text("research_teams: 1\n")
    return path


def init(out: Path, *options: str) -> tuple[int, str]:
    """``gpuplan init`` with the answers of ``answers`` beside ``out``: (exit code, stderr on one line)."""
    code, _, err = gpuplan("init", "--answers", str(out.parent / "answers.yaml"), "--out", str(out), *options)
    return code, " ".join(err.split())


def listing(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


@pytest.mark.usefixtures("answers")
@pytest.mark.parametrize(
    "error", [errno.ENOSPC, errno.EACCES, errno.EROFS], ids=["full", "denied", "read-only"]
)
def test_a_failed_write_leaves_no_file_and_the_retry_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: int
) -> None:
    out = tmp_path / "scenario.yaml"
    failing_midway(monkeypatch, error)
    code, err = init(out)
    assert code == 2
    assert f"{out}: cannot write: {os.strerror(error)}" in err
    assert listing(tmp_path) == ["answers.yaml"]  # no empty scenario, no temporary

    monkeypatch.undo()
    code, err = init(out)
    assert code == 0, err
    assert load_scenario(out).scenario.name == "gpu-platform"


@pytest.mark.usefixtures("answers")
def test_force_keeps_the_old_file_until_the_new_text_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "scenario.yaml"
    out.write_text(OLD)
    failing_midway(monkeypatch, errno.ENOSPC)
    code, err = init(out, "--force")
    assert code == 2 and "No space left on device" in err
    assert out.read_text() == OLD
    assert listing(tmp_path) == ["answers.yaml", "scenario.yaml"]

    monkeypatch.undo()
    code, err = init(out)
    assert code == 2 and "exists already (give --force to replace it)" in err
    assert out.read_text() == OLD
    code, err = init(out, "--force")
    assert code == 0, err
    assert out.read_text() != OLD and load_scenario(out).scenario.teams[0].name == "research-1"


@pytest.mark.usefixtures("answers")
def test_ctrl_c_while_writing_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "scenario.yaml"
    out.write_text(OLD)
    original = Path.write_text

    def interrupted(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        original(self, data[:10], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", interrupted)
    code, err = init(out, "--force")
    assert code == 130 and "interrupted: nothing was written" in err
    assert out.read_text() == OLD
    assert listing(tmp_path) == ["answers.yaml", "scenario.yaml"]


def dead_pid() -> int:
    """The process id of a process that has ended."""
    process = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return int(process.stdout)


@pytest.mark.usefixtures("answers")
def test_a_temporary_left_by_a_killed_run_neither_blocks_nor_stays(tmp_path: Path) -> None:
    out = tmp_path / "scenario.yaml"
    killed = temporary_of(out, dead_pid())
    killed.write_text("name: half of a scen")
    running = temporary_of(out, os.getppid())  # a writer still at work: its file is not touched
    running.write_text("name: being written")
    code, err = init(out)
    assert code == 0, err
    assert not killed.exists() and running.exists()
    assert load_scenario(out).scenario.name == "gpu-platform"


@pytest.mark.usefixtures("answers")
def test_a_symbolic_link_keeps_pointing_at_the_replaced_file(tmp_path: Path) -> None:
    target = tmp_path / "real.yaml"
    target.write_text(OLD)
    link = tmp_path / "scenario.yaml"
    link.symlink_to(target.name)
    code, err = init(link, "--force")
    assert code == 0, err
    assert link.is_symlink() and load_scenario(target).scenario.name == "gpu-platform"


def test_schema_out_is_written_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "gpuplan.schema.json"
    out.write_text('{"old": true}\n')
    failing_midway(monkeypatch, errno.ENOSPC)
    code, _, err = gpuplan("schema", "--out", str(out))
    assert code == 2 and f"{out}: cannot write: No space left on device" in " ".join(err.split())
    assert out.read_text() == '{"old": true}\n' and listing(tmp_path) == [out.name]

    monkeypatch.undo()
    assert gpuplan("schema", "--out", str(out))[0] == 0
    assert json.loads(out.read_text())["title"] == "Scenario"
    missing = tmp_path / "missing" / "schema.json"
    code, _, err = gpuplan("schema", "--out", str(missing))
    assert code == 2 and f"{missing}: cannot write: No such file or directory" in " ".join(err.split())


def test_a_pipe_is_written_in_place(tmp_path: Path) -> None:
    """``--out`` naming a pipe or a device (``/dev/stdout``): no file to keep whole, and no rename
    over the pipe's entry."""
    fifo = tmp_path / "schema.fifo"
    os.mkfifo(fifo)
    read: list[str] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_text()), daemon=True)
    reader.start()
    code, _, err = gpuplan("schema", "--out", str(fifo))
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and json.loads(read[0])["title"] == "Scenario"


def test_atomic_write_failing_midway_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "file.txt"
    path.write_text(OLD)

    def half_then_full(temporary: Path) -> None:
        temporary.write_text("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(InputError, match="cannot write: No space left on device") as raised:
        atomic_write(path, half_then_full)
    assert raised.value.path == str(path)
    assert path.read_text() == OLD and listing(tmp_path) == ["file.txt"]
    assert remove_stale_temporaries(path) == []
