"""The sacct --parsable2 reader: columns by name, steps, arrays and het jobs, requeued attempts, time
limits and TRES, errors that name file, line and column, the fast and slow paths agreeing, format
detection, the CLI end to end, and the real Slurm 22.05 output in ../shared/traces."""

from __future__ import annotations

import gzip
import json
import math
import tempfile
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpuplan.cli import app
from gpuplan.errors import InputError
from gpuplan.workload import csvcolumns, sacct
from gpuplan.workload.readers import READERS, detect_format, read_trace
from gpuplan.workload.sacct import job_key, parse_duration, parse_tres, read_sacct, state_name
from gpuplan.workload.trace import Trace

from builders import DATA, assert_same_traces

SLICE = DATA / "sacct_gpusim_22.05_slice.txt"
AWKWARD = DATA / "sacct_awkward.txt"

HEADER = "JobID|User|Account|Partition|Submit|Start|End|Timelimit|NNodes|AllocTRES|State\n"
GOOD = [
    "1|u|a|gpu|2024-03-01T10:00:00|2024-03-01T10:00:10|2024-03-01T10:01:10|01:00:00|1|gres/gpu=2,node=1|COMPLETED",
    "2|u|a|gpu|2024-03-01T10:00:20|2024-03-01T10:00:30|2024-03-01T10:00:40|01:00:00|1|gres/gpu=1,node=1|COMPLETED",
]


def unix(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def write(tmp_path: Path, text: str, name: str = "sacct.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    return path


def slow_only() -> AbstractContextManager[object]:
    """Make every block take the slow path (line by line)."""
    return mock.patch.object(sacct._SacctReader, "_fast", lambda self, block, line: None)


# -- real sacct output -------------------------------------------------------------------------------------


def test_the_bundled_slice_of_real_sacct_output() -> None:
    trace = read_sacct(SLICE)
    jobs = trace.jobs
    assert (trace.format, len(jobs), trace.skipped_invalid, trace.bad_lines) == ("sacct", 7, 0, 0)
    assert jobs.job_id.tolist() == [1, 7, 8, 10, 20, 21, 25]  # steps (1.batch, ...) are skipped
    assert trace.epoch_s == unix("2026-11-30T02:45:00")  # job 1's Submit
    # jobs 8 and 10 were preempted and requeued: they arrive at their first Submit (02:45:07) and run
    # as long as their final attempt (62 s and 58 s), which is the line they come from
    assert jobs.submit_s.tolist() == [0.0, 5.0, 7.0, 7.0, 25.0, 29.0, 34.0]
    assert jobs.duration_s.tolist() == [14.0, 22.0, 62.0, 58.0, 5.0, 15.0, 13.0]
    assert jobs.source_line.tolist() == [2, 4, 10, 16, 12, 14, 18]
    assert (trace.header["requeued_jobs"], trace.header["earlier_attempts"]) == ("2", "2")
    assert jobs.gpus.tolist() == [8, 16, 8, 8, 8, 32, 16]
    assert jobs.nodes.tolist() == [1, 2, 1, 1, 1, 4, 2] and set(jobs.gpus_per_node.tolist()) == {8}
    assert jobs.partition.values() == ["batch", "batch", "batch", "batch", "high", "batch", "high"]
    assert jobs.team.values() == ["acct_b", "acct_a", "acct_b", "acct_b", "acct_b", "acct_b", "acct_a"]
    assert jobs.user.values()[:3] == ["sim_dave", "sim_bob", "sim_dave"]
    assert set(jobs.state.values()) == {"completed"} and set(jobs.qos.values()) == {"normal"}
    assert jobs.time_limit_s.tolist() == [60.0, 60.0, 180.0, 60.0, 120.0, 120.0, 60.0]
    assert jobs.cpus_per_node.tolist() == [1] * 7  # cpu=2 on 2 nodes
    # ReqTRES mem=1000G on node=2 is the nodes' RealMemory of a job that asked none; AllocTRES lists
    # no mem: under CR_Core the jobs held none, so it is unknown
    assert np.isnan(jobs.mem_per_node).all()
    assert set(jobs.kind.values()) == {"batch"}


def test_the_full_shared_sacct_output(shared_trace: Callable[[str], Path]) -> None:
    shared_sacct = shared_trace("slurm/sacct_gpusim_22.05_30jobs.txt")
    trace = read_sacct(shared_sacct)
    jobs = trace.jobs
    assert (len(jobs), trace.skipped_invalid, trace.bad_lines) == (30, 0, 0)
    assert jobs.job_id.tolist() == list(range(1, 31))
    assert trace.epoch_s == unix("2026-11-30T02:45:00")
    assert jobs.submit_s.max() == 39.0  # job 30
    assert (trace.header["requeued_jobs"], trace.header["earlier_attempts"]) == ("6", "6")  # 8 10 12 13 14 18
    assert int(jobs.gpus.sum()) == 282
    assert Counter(jobs.gpus.tolist()) == {8: 7, 16: 6, 2: 5, 4: 5, 1: 4, 32: 3}
    assert Counter(jobs.nodes.tolist()) == {1: 21, 2: 6, 4: 3}
    assert int(jobs.gpus_per_node.max()) == 8  # fits the traced 8 x 8 GPUs
    assert Counter(jobs.partition.values()) == {"batch": 26, "high": 4}
    assert Counter(jobs.team.values()) == {"acct_a": 17, "acct_b": 13}
    assert Counter(jobs.user.values()) == {"sim_alice": 11, "sim_dave": 7, "sim_carol": 6, "sim_bob": 6}
    assert set(jobs.state.values()) == {"completed"}  # every requeued job completed in the end
    assert Counter(jobs.time_limit_s.tolist()) == {60.0: 17, 120.0: 10, 180.0: 3}
    assert (jobs.duration_s <= jobs.time_limit_s).all()
    twelve = jobs.job_id.tolist().index(12)  # preempted after 25 s, requeued, then ran 35 s
    assert (jobs.submit_s[twelve], jobs.duration_s[twelve]) == (9.0, 35.0)
    with slow_only():
        assert_same_traces(trace, read_sacct(shared_sacct))


# -- awkward rows ------------------------------------------------------------------------------------------


def test_arrays_het_jobs_limits_typed_gres_and_missing_values() -> None:
    trace = read_sacct(AWKWARD)
    jobs = trace.jobs
    # skipped: the pending array tasks 101_[3-10%2], the CPU-only het component 102+1, job 103
    # (cancelled before it started) and job 104 (still running)
    assert (len(jobs), trace.skipped_invalid, trace.bad_lines) == (8, 4, 0)
    assert jobs.job_id.tolist() == [100, 10100000_00001, 10100000_00002, 10250000_00000, 105, 106, 107, 109]
    assert trace.header["job_ids"] == sacct.JOB_IDS_NOTE
    assert trace.epoch_s == unix("2024-03-01T09:59:00")  # job 106's first attempt
    # job 105 was submitted at 10:04 with --begin 12:00: it arrives when it became eligible
    assert jobs.submit_s.tolist() == [60.0, 65.0, 65.0, 120.0, 7260.0, 0.0, 420.0, 480.0]
    assert jobs.duration_s.tolist() == [3600.0, 7230.0, 60.0, 60.0, 1800.0, 600.0, 30.0, 600.0]
    # UNLIMITED, 02:00:00, 1-00:00:00, Partition_Limit, 45 (minutes), 04:00:00, 00:10 (MM:SS), 01:00:00
    np.testing.assert_array_equal(
        jobs.time_limit_s, [math.nan, 7200.0, 86400.0, math.nan, 2700.0, 14400.0, 10.0, 3600.0]
    )
    # 100: gres/gpu=8 and gres/gpu:h100=8 are the same 8 GPUs; 101_1: typed only, 4 on 2 nodes;
    # 105: 4 GPUs on 3 nodes round up to 2 a node; 107: no AllocTRES and no NNodes, so ReqTRES's 2 GPUs
    # on one node of 8; 109: the attempt that ran, 16 GPUs on 2 nodes
    assert jobs.nodes.tolist() == [1, 2, 1, 1, 3, 1, 1, 2]
    assert jobs.gpus_per_node.tolist() == [8, 2, 4, 1, 2, 8, 2, 8]
    assert jobs.cpus_per_node.tolist() == [16, 4, 8, 4, 1, 8, 0, 1]
    assert jobs.mem_per_node[0] == 512_000.0 and np.isnan(jobs.mem_per_node[1:]).all()
    assert jobs.user.values() == ["alice", "bob", "bob", "carol", "frank", "gina", "hank", "ivan"]
    assert jobs.team.values()[3] == "carol"  # no Account: the user
    assert jobs.qos.values() == [
        "normal",
        "long",
        "long",
        "normal",
        "normal",
        "normal",
        "normal",
        "scavenger",
    ]
    # 109 was preempted and is pending again: it keeps the run it had, and its final state
    assert jobs.state.values() == [
        "completed",
        "timeout",
        "failed",
        "completed",
        "completed",
        "completed",
        "completed",
        "pending",
    ]
    assert jobs.source_line.tolist() == [2, 5, 7, 9, 13, 17, 16, 19]  # line 15 is blank
    assert (trace.header["requeued_jobs"], trace.header["earlier_attempts"]) == ("2", "2")


def test_gpus_per_node_only_groups_jobs_without_a_node_count() -> None:
    one = read_sacct(AWKWARD, gpus_per_node=1).jobs
    eight = read_sacct(AWKWARD).jobs
    assert one.nodes.tolist() == [1, 2, 1, 1, 3, 1, 2, 2]  # only job 107 (2 GPUs, no node count) changes
    assert one.gpus_per_node.tolist() == [8, 2, 4, 1, 2, 8, 1, 8]
    assert one.gpus.tolist() == eight.gpus.tolist()
    with pytest.raises(InputError, match="--gpus-per-node: must be at least 1"):
        read_sacct(AWKWARD, gpus_per_node=0)


def test_attempts_are_ordered_by_submit_not_by_line(tmp_path: Path) -> None:
    lines = (DATA / "sacct_gpusim_22.05_slice.txt").read_text().splitlines()
    header, rows = lines[0], lines[1:]
    shuffled = write(tmp_path, "\n".join([header, *reversed(rows)]) + "\n")
    a, b = read_sacct(SLICE).jobs, read_sacct(shuffled).jobs
    order = np.argsort(b.job_id)
    assert b.job_id[order].tolist() == a.job_id.tolist()
    for name in ("submit_s", "duration_s", "nodes", "gpus_per_node", "time_limit_s"):
        np.testing.assert_array_equal(getattr(b, name)[order], getattr(a, name), err_msg=name)


def test_a_run_time_from_elapsed_when_start_or_end_is_absent(tmp_path: Path) -> None:
    text = "JobID|Submit|Elapsed|ReqTRES|State\n"
    text += "1|2024-03-01T10:00:00|00:05:00|gres/gpu=1|COMPLETED\n"
    text += "2|2024-03-01T10:00:00|00:00:00|gres/gpu=1|CANCELLED by 0\n"  # cancelled before it started
    text += "3|2024-03-01T10:00:00|00:00:00|gres/gpu=1|PENDING\n"
    text += "4|2024-03-01T10:00:00|00:03:00|gres/gpu=1|RUNNING\n"
    text += "5|2024-03-01T10:00:05|1-00:00:01|gres/gpu=16|TIMEOUT\n"
    text += "6|2024-03-01T10:00:06|00:00:00|gres/gpu=1|FAILED\n"  # failed at once: ran 0 s
    trace = read_sacct(write(tmp_path, text))
    assert (trace.jobs.job_id.tolist(), trace.skipped_invalid) == ([1, 5, 6], 3)
    assert trace.jobs.duration_s.tolist() == [300.0, 86401.0, 0.0]
    assert trace.jobs.nodes.tolist() == [1, 2, 1]  # no NNodes nor node=: 16 GPUs on nodes of 8
    assert trace.jobs.state.values() == ["completed", "timeout", "failed"]
    assert set(trace.jobs.team.values()) == {"unknown"} and set(trace.jobs.partition.values()) == {""}


def test_header_variants(tmp_path: Path) -> None:
    # sacct -p ends each line with "|"; names in any case; a byte-order mark; CRLF; gzip
    text = "\ufeff" + HEADER.lower().replace("\n", "|\r\n") + "".join(row + "|\r\n" for row in GOOD)
    for name in ("p.txt", "p.txt.gz"):
        trace = read_sacct(write(tmp_path, text, name))
        assert (trace.jobs.job_id.tolist(), trace.jobs.gpus.tolist()) == ([1, 2], [2, 1])
        assert trace.jobs.duration_s.tolist() == [60.0, 10.0]
    only = read_sacct(write(tmp_path, HEADER, "only.txt"))
    assert (len(only.jobs), only.epoch_s, only.skipped_invalid) == (0, None, 0)
    steps = read_sacct(write(tmp_path, HEADER + GOOD[0].replace("1|", "1.batch|", 1) + "\n", "steps.txt"))
    assert (len(steps.jobs), steps.skipped_invalid, steps.bad_lines) == (0, 0, 0)


def test_line_numbers_hold_across_blocks_and_blank_lines(tmp_path: Path) -> None:
    lines: list[str] = []
    job_lines = {}  # job id -> line number (the header is line 1)
    for i in range(1, 121):
        job_lines[i] = len(lines) + 2
        row = GOOD[0].replace("1|", f"{i}|", 1).replace("gres/gpu=2", f"gres/gpu={1 + i % 8}")
        lines += [row, f"{i}.batch|||||||||cpu=1|COMPLETED"]
        if i % 7 == 0:
            lines.append("")
    bad = job_lines.pop(100)
    lines[bad - 2] = lines[bad - 2].replace("|1|gres", "|one|gres")
    path = write(tmp_path, HEADER + "\n".join(lines) + "\n")
    results = []
    for block in (64, 1 << 20):
        with mock.patch.object(csvcolumns, "BLOCK_BYTES", block):
            with pytest.raises(InputError) as caught:
                read_sacct(path)
            assert (caught.value.line, caught.value.field) == (bad, "NNodes")
            trace = read_sacct(path, skip_bad_lines=True)
        assert trace.bad_lines == 1
        assert trace.jobs.job_id.tolist() == list(job_lines)
        assert trace.jobs.source_line.tolist() == list(job_lines.values())
        results.append(trace)
    assert_same_traces(*results)


# -- values ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:01:00", 60.0),
        ("1-00:00:00", 86400.0),
        ("2-03:04:05", 183845.0),
        ("12:34:56", 45296.0),
        ("05:30", 330.0),  # MM:SS
        ("45", 2700.0),  # MM
        ("1-2", 93600.0),  # D-HH
        ("1-02:30", 95400.0),  # D-HH:MM
        ("UNLIMITED", math.nan),
        ("Partition_Limit", math.nan),
        ("INVALID", math.nan),
        ("", math.nan),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    np.testing.assert_equal(parse_duration(text), seconds)


@pytest.mark.parametrize(
    ("text", "gpus", "cpus", "mem", "nodes"),
    [
        ("billing=1,cpu=1,gres/gpu=8,node=1", 8, 1, math.nan, 1),
        ("cpu=16,gres/gpu=8,gres/gpu:h100=8,mem=500G,node=1", 8, 16, 512_000.0, 1),  # total and by type
        ("gres/gpu:a100=2,gres/gpu:v100=4", 6, 0, math.nan, 0),  # typed only: summed
        ("gres/gpu=4,gres/gpu:a100=2", 4, 0, math.nan, 0),  # a partial breakdown
        ("gres/gpumem=40G,gres/gpuutil=90,gres/shard=2,cpu=4", 0, 4, math.nan, 0),  # not GPUs
        ("cpu=2,mem=16000M,node=1", 0, 2, 16_000.0, 1),
        ("mem=1.5T,energy=12,fs/disk=1", 0, 0, 1.5 * 1024**2, 0),
    ],
)
def test_tres(text: str, gpus: int, cpus: int, mem: float, nodes: int) -> None:
    np.testing.assert_equal(parse_tres(text), (1.0, gpus, cpus, mem, nodes))
    np.testing.assert_equal(parse_tres(" "), (0.0, 0.0, 0.0, math.nan, 0.0))


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("123", 123),
        (" 4294967294 ", 4294967294),
        ("123_4", 1230000000004),
        ("123+1", 1235000000001),
        ("123.batch", None),
        ("123.extern", None),
        ("123.0", None),
        ("123_4.batch", None),
        ("123+0.0", None),
        ("123_[5-100%4]", sacct.PENDING_ARRAY),
        ("922337203_999999999", 922337203 * 10**10 + 999999999),
    ],
)
def test_job_ids(text: str, key: int | None) -> None:
    assert job_key(text) == key


@pytest.mark.parametrize(("raw", "state"), [("COMPLETED", "completed"), ("CANCELLED by 1234", "cancelled")])
def test_state_names(raw: str, state: str) -> None:
    assert (state_name(raw), state_name(" "), state_name("TIMEOUT")) == (state, "unknown", "timeout")


# -- errors ------------------------------------------------------------------------------------------------

BAD_ROWS = [
    (GOOD[0].replace("1|u", "x1|u", 1), "JobID", "expected a Slurm job id"),
    (GOOD[0].replace("1|u", "999999999999_1|u", 1), "JobID", "expected a Slurm job id"),
    (
        GOOD[0].replace("1|u", "922337204_1|u", 1),
        "JobID",
        "expected an array or het job id from 1 to 922337203",
    ),
    (GOOD[0].replace("10:00:10", "25:00:10"), "Start", "expected a date and time (YYYY-MM-DDTHH:MM:SS)"),
    (GOOD[0].replace("2024-03-01T10:01:10", "yesterday"), "End", "Unknown or None, got 'yesterday'"),
    (GOOD[0].replace("2024-03-01T10:00:00", "2024-02-30T10:00:00"), "Submit", "got '2024-02-30T10:00:00'"),
    (GOOD[0].replace("01:00:00", "1h"), "Timelimit", "expected a duration ([D-]HH:MM:SS, MM:SS or MM)"),
    (GOOD[0].replace("|1|gres", "|1.5|gres"), "NNodes", "expected a whole number, got '1.5'"),
    (GOOD[0].replace("gres/gpu=2", "gres/gpu=x"), "AllocTRES", "expected a whole number for gres/gpu"),
    (GOOD[0].replace("gres/gpu=2", "gres/gpu"), "AllocTRES", "expected TRES as name=count pairs"),
    (GOOD[0].replace("gres/gpu=2", "mem=lots"), "AllocTRES", "expected an amount of memory"),
    (GOOD[0].rsplit("|", 1)[0], "State", "expected 11 columns as in the header, found 10"),
    (GOOD[0] + "|extra", "column 12", "expected 11 columns as in the header, found 12"),
    ("1.batch|u", "Account", "expected 11 columns as in the header, found 2"),  # steps must have the columns
]


@pytest.mark.parametrize(("bad_row", "field", "message"), BAD_ROWS, ids=[f"{f}: {m}" for _, f, m in BAD_ROWS])
@pytest.mark.parametrize("path_kind", ["fast", "slow"])
def test_a_malformed_line_names_file_line_and_column(
    tmp_path: Path, bad_row: str, field: str, message: str, path_kind: str
) -> None:
    path = write(tmp_path, HEADER + GOOD[0] + "\n\n" + bad_row + "\n" + GOOD[1] + "\n")  # bad row: line 4
    with slow_only() if path_kind == "slow" else nullcontext():
        with pytest.raises(InputError) as caught:
            read_sacct(path)
        error = caught.value
        assert (error.path, error.line, error.field) == (str(path), 4, field)
        assert message in error.message
        assert str(error).startswith(f"{path}:4: {field}: ")
        trace = read_sacct(path, skip_bad_lines=True)
    assert (trace.bad_lines, trace.jobs.job_id.tolist(), trace.jobs.source_line.tolist()) == (
        1,
        [1, 2],
        [2, 5],
    )


def test_a_step_is_not_read_beyond_its_job_id(tmp_path: Path) -> None:
    step = "1.batch|||||not a time|x|||gres/gpu=?|"
    trace = read_sacct(write(tmp_path, HEADER + GOOD[0] + "\n" + step + "\n"))
    assert (len(trace.jobs), trace.bad_lines) == (1, 0)


@pytest.mark.parametrize(
    ("header", "field", "message"),
    [
        ("User|Submit|Start|End|AllocTRES", "JobID", "missing column (the header has: User, Submit,"),
        ("JobID|Start|End|AllocTRES", "Submit", "missing column"),
        ("JobID|Submit|End|AllocTRES", "Start", "a run time needs Start and End, or Elapsed"),
        ("JobID|Submit|Start|AllocTRES", "End", "a run time needs Start and End, or Elapsed"),
        ("JobID|Submit|Start|End|NNodes", "AllocTRES", "GPUs need AllocTRES or ReqTRES"),
        ("", "JobID", "missing column (the header has: no columns)"),
    ],
)
def test_a_missing_column_is_an_error_at_line_1(
    tmp_path: Path, header: str, field: str, message: str
) -> None:
    path = write(tmp_path, header + "\n")
    for skip in (False, True):
        with pytest.raises(InputError) as caught:
            read_sacct(path, skip_bad_lines=skip)
        assert (caught.value.line, caught.value.field) == (1, field)
        assert message in caught.value.message


def test_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"absent\.txt: no such file"):
        read_sacct(tmp_path / "absent.txt")
    (tmp_path / "broken.txt.gz").write_bytes(b"not gzip")
    with pytest.raises(InputError, match="cannot read: Not a gzipped file"):
        read_sacct(tmp_path / "broken.txt.gz")


# -- format detection and the CLI ----------------------------------------------------------------------------


def test_sacct_output_is_told_by_its_header_whatever_the_name(tmp_path: Path) -> None:
    assert "sacct" in READERS
    text = SLICE.read_text()
    for name in ("jobs.txt", "jobs.csv", "jobs", "jobs.log.gz", "jobs.csv.gz"):
        path = write(tmp_path, text, name)
        assert detect_format(path) == "sacct", name
        assert read_trace(path).jobs.job_id.tolist() == [1, 7, 8, 10, 20, 21, 25]
    assert detect_format(AWKWARD) == "sacct"
    other = write(tmp_path, "JobID,Submit\n1,2\n", "other.txt")
    with pytest.raises(InputError, match="sacct --parsable2 output"):
        detect_format(other)
    no_id = write(tmp_path, "Job|Submit\n", "no_id.txt")
    with pytest.raises(InputError, match="known endings"):
        detect_format(no_id)


runner = CliRunner()


@pytest.mark.parametrize(("fixture", "jobs"), [(SLICE, 7), (AWKWARD, 8)])
def test_simulate_a_sacct_file_end_to_end(tmp_path: Path, fixture: Path, jobs: int) -> None:
    args = ["simulate", str(fixture), "--model", "slurm", "--nodes", "8", "--gpus-per-node", "8", "--json"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["jobs"]["submitted"] == jobs
    assert summary["jobs"]["rejected"] == 0
    assert summary["cluster"]["gpus"] == 64
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["input"]["format"] == "sacct" and saved["input"]["jobs_read"] == jobs


def test_inspect_tells_the_format_without_format(tmp_path: Path) -> None:
    result = runner.invoke(app, ["inspect", str(AWKWARD), "--json", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["input"]["format"] == "sacct"
    assert (report["input"]["jobs_read"], report["input"]["skipped_invalid_jobs"]) == (8, 4)
    assert "4 job(s) with no run time or no GPUs were skipped" in result.stderr


# -- any input gives a trace or an InputError, alike on both paths ------------------------------------------

HEADERS = [HEADER.strip(), "JobID|Submit|Eligible|Elapsed|ReqTRES|AllocTRES|NNodes|State|QOS|Account|User"]
CELLS = st.sampled_from(
    [
        "",
        " ",
        "1",
        "0",
        "12_3",
        "12+1",
        "12.batch",
        "12_[1-3]",
        "x",
        "2024-03-01T10:00:00",
        "2024-03-01 10:00:05",
        " 2024-03-01T10:00:09 ",
        "2024-02-30T10:00:00",
        "2024-03-01T24:00:00",
        "0999-03-01T10:00:00",
        "Unknown",
        "None",
        "unknown",
        "01:00:00",
        "1-00:00:00",
        "UNLIMITED",
        "Partition_Limit",
        "5",
        "gres/gpu=8",
        "cpu=2,gres/gpu:a100=4,node=2",
        "gres/gpu=x",
        "mem=4G",
        "COMPLETED",
        "CANCELLED by 5",
        "PENDING",
        "\r",
        '"',
        "\u00e9",
        "\x00",
    ]
) | st.text(max_size=4)


@st.composite
def lines(draw: st.DrawFn, header: str) -> list[str]:
    width = header.count("|") + 1
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        cells = draw(st.lists(CELLS, min_size=width, max_size=width))
        if draw(st.integers(0, 5)) == 0:
            cells = cells[: draw(st.integers(0, width + 1))]
        rows.append("|".join(cells))
    return rows


# Cells that mostly parse, by the kind of each column of HEADERS.
GOOD_CELLS = {
    "i": st.sampled_from(["1", "2", "3", " 4 ", "007", "12_3", "12_4", "12+0", "12+1", "3.batch", "12_3.0"]),
    "t": st.sampled_from(
        [
            "2024-03-01T10:00:00",
            "2024-03-01 10:00:05",
            " 2024-03-01T10:00:09 ",
            "2024-03-01T11:00:00",
            "2024-02-29T23:59:59",
            "Unknown",
            "None",
            "",
        ]
    ),
    "d": st.sampled_from(["01:00:00", "00:00:10", "1-00:00:00", "45", "05:30", "UNLIMITED", "", "00:00:00"]),
    "n": st.sampled_from(["1", "2", "", "0", " 3 "]),
    "g": st.sampled_from(
        [
            "gres/gpu=8",
            "cpu=2,gres/gpu:a100=4,node=2",
            "gres/gpu=2,gres/gpu:h100=2,mem=4G,node=1",
            "cpu=4,mem=100G",
            "",
            "billing=1,cpu=1,gres/gpu=1,node=1",
        ]
    ),
    "x": st.sampled_from(["a", "b", "", "COMPLETED", "CANCELLED by 5", "PENDING", "RUNNING", "é", " x "]),
}
LAYOUTS = ["ixxxtttdngx", "ittdggnxxxx"]  # the kinds of the columns of HEADERS


@st.composite
def mostly_good_lines(draw: st.DrawFn, layout: str) -> list[str]:
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        cells = [draw(GOOD_CELLS[kind]) for kind in layout]
        if draw(st.integers(0, 4)) == 0:  # now and then a cell from anywhere
            cells[draw(st.integers(0, len(cells) - 1))] = draw(CELLS)
        rows.append("|".join(cells))
    return rows


def read_or_error(path: Path, skip: bool) -> Trace | str:
    try:
        trace = read_sacct(path, skip_bad_lines=skip)
    except InputError as error:
        return str(error)
    assert isinstance(trace, Trace)
    return trace


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(), header=st.sampled_from(HEADERS), skip=st.booleans(), block=st.sampled_from([16, 1 << 20])
)
def test_random_lines_give_a_trace_or_an_input_error_alike_on_both_paths(
    data: st.DataObject, header: str, skip: bool, block: int
) -> None:
    check_both_paths(header, data.draw(lines(header)), skip, block)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(), which=st.sampled_from([0, 1]), skip=st.booleans(), block=st.sampled_from([16, 1 << 20])
)
def test_mostly_good_lines_read_alike_on_both_paths(
    data: st.DataObject, which: int, skip: bool, block: int
) -> None:
    check_both_paths(HEADERS[which], data.draw(mostly_good_lines(LAYOUTS[which])), skip, block)


def check_both_paths(header: str, rows: list[str], skip: bool, block: int) -> None:
    """The file reads (or fails) the same on the fast path as line by line."""
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(csvcolumns, "BLOCK_BYTES", block):
        path = Path(folder) / "sacct.txt"
        path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
        fast = read_or_error(path, skip)
        with slow_only():
            slow = read_or_error(path, skip)
    if isinstance(fast, str) or isinstance(slow, str):
        assert fast == slow
    else:
        assert_same_traces(fast, slow)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300), gz=st.booleans())
def test_random_bytes_give_a_trace_or_an_input_error(data: bytes, gz: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("t.txt.gz" if gz else "t.txt")
        path.write_bytes(gzip.compress(HEADER.encode() + data) if gz else HEADER.encode() + data)
        for skip in (False, True):
            read_or_error(path, skip)
