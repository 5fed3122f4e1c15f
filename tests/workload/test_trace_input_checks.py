"""Issue 43's trace items: a trace without jobs is refused (5), --skip-bad-lines names the lines it
skips (7), and team and user names are names (6): through the CLI, exit 2 with file, line and field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.workload.k8s_pods import read_kubectl_pods
from gpuplan.workload.philly import read_philly
from gpuplan.workload.readers import read_trace
from gpuplan.workload.sacct import read_sacct
from gpuplan.workload.swf import read_swf
from gpuplan.workload.trace import SKIPPED_LINES_LISTED, SkippedLine, Trace

from builders import assert_same_traces, gpuplan

SWF_HEADER = "; MaxProcs: 64\n; UnixStartTime: 1700000000\n"
SACCT_HEADER = "JobID|User|Account|Partition|Submit|Start|End|AllocTRES|State\n"
PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
HELIOS_HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
)
ALIBABA_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time\n"
)


def swf_line(job: int, run: str = "600") -> str:
    return f"{job} {job * 10} 0 {run} 4 -1 -1 4 3600 -1 1 {job % 3} {job % 2} -1 1 1 -1 -1"


def sacct_line(job: int, user: str = "alice", account: str = "nlp", submit: str | None = None) -> str:
    when = submit or f"2024-01-01T10:{job % 60:02d}:00"
    times = f"{when}|2024-01-01T11:00:00|2024-01-01T12:00:00"
    return f"{job}|{user}|{account}|gpu|{times}|gres/gpu=2,node=1|COMPLETED"


def philly_line(job: int, duration: str = "600", cluster: str = "vc1") -> str:
    return f"2017-10-03 10:{job % 60:02d}:00,{duration},2,0,{cluster}"


def helios_line(job: int, user: str = "alice", vc: str = "nlp") -> str:
    return (
        f"{job},{user},{vc},8,16,1,COMPLETED,2020-04-01 10:00:00,2020-04-01 10:01:00,2020-04-01 11:00:00,"
        "3540,q"
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def cli_error(*args: str) -> str:
    """``gpuplan ARGS``, which must end with exit code 2: its message, on one line."""
    code, _, err = gpuplan(*args)
    assert code == 2, err
    assert "Traceback" not in err
    return " ".join(err.split())


# ---- item 5: a trace without a job line ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("t.swf", SWF_HEADER + "; a comment\n"),  # comment lines only, with a machine size
        ("t.swf", ""),  # an empty file reads as one of comments only does
        ("t.sacct", SACCT_HEADER),
        ("p.csv", PHILLY_HEADER),
        ("h.csv", HELIOS_HEADER),
        ("openb_pod_list_x.csv", ALIBABA_HEADER),
        ("pods.json", '{"apiVersion": "v1", "kind": "List", "items": []}\n'),
    ],
)
@pytest.mark.parametrize("command", ["simulate", "inspect"])
def test_a_trace_of_no_job_lines_is_refused(tmp_path: Path, name: str, text: str, command: str) -> None:
    path = write(tmp_path / name, text)
    out = tmp_path / "out"
    message = cli_error(command, str(path), "--out", str(out), "--nodes", "4")
    end = text.count("\n") + 1  # the line where the text ends
    assert f"error: {path}:{end}: no jobs in the file up to its end: it has no job lines" in message
    assert not out.exists()  # refused before anything is written


def test_a_trace_whose_every_line_was_skipped_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "t.swf", SWF_HEADER + "1 2 3\nx\n")
    message = cli_error("simulate", str(path), "--skip-bad-lines", "--out", str(tmp_path / "out"))
    assert f"{path}:5: no jobs in the file up to its end: 2 malformed line(s) were skipped" in message


# ---- item 7: --skip-bad-lines names what it skipped ------------------------------------------------------


def with_bad_lines(tmp_path: Path, bad: int, good: int = 10) -> tuple[Path, list[int]]:
    """An SWF file of ``good`` jobs, then ``bad`` lines whose run time is not a number; the bad lines'
    numbers."""
    lines = SWF_HEADER.splitlines()
    lines += [swf_line(job) for job in range(1, good + 1)]
    bad_at = []
    for job in range(good + 1, good + bad + 1):
        lines.append(swf_line(job, run="x"))
        bad_at.append(len(lines))
    return write(tmp_path / "t.swf", "\n".join(lines) + "\n"), bad_at


def test_skipped_lines_are_listed_in_the_warning_and_the_summary(tmp_path: Path) -> None:
    path, bad_at = with_bad_lines(tmp_path, bad=30)
    out = tmp_path / "out"
    code, _, err = gpuplan("simulate", str(path), "--skip-bad-lines", "--model", "slurm", "--out", str(out))
    assert code == 0, err
    warning = err[err.index("warning: 30 malformed") :].splitlines()
    assert warning[0] == "warning: 30 malformed line(s) were skipped (--skip-bad-lines); the first 20:"
    assert [line.strip() for line in warning[1:21]] == [
        f"{path}:{line}: field 4 (run time): expected a number, got 'x'" for line in bad_at[:20]
    ]
    assert not any(line.strip().startswith(f"{path}:") for line in warning[21:])  # the 21st is counted only
    recorded = json.loads((out / "summary.json").read_text())["input"]["skipped_lines"]
    assert recorded == {
        "count": 30,
        "first": [
            {"line": line, "field": "field 4 (run time)", "why": "expected a number, got 'x'"}
            for line in bad_at[:20]
        ],
    }


def test_a_few_skipped_lines_are_all_listed(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.csv", PHILLY_HEADER + philly_line(1) + "\n" + philly_line(2, duration="-5") + "\n"
    )
    code, _, err = gpuplan("inspect", str(path), "--skip-bad-lines", "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert (
        f"warning: 1 malformed line(s) were skipped (--skip-bad-lines):\n  {path}:3: duration: expected a "
        "number from 0 to 8,589,934,592, got '-5'"
    ) in err
    figures = json.loads((tmp_path / "out" / "inspect.json").read_text())
    assert figures["input"]["skipped_lines"]["count"] == 1


def many_bad_lines(tmp_path: Path, format: str, bad: int) -> Path:
    """A trace of ``format`` with one good job, then ``bad`` malformed lines."""
    if format == "swf":
        lines = [
            *SWF_HEADER.splitlines(),
            swf_line(1),
            *(swf_line(job, run="x") for job in range(2, bad + 2)),
        ]
        return write(tmp_path / "t.swf", "\n".join(lines) + "\n")
    if format == "philly":
        rows = [philly_line(1), *(philly_line(job, duration="x") for job in range(2, bad + 2))]
        return write(tmp_path / "p.csv", PHILLY_HEADER + "\n".join(rows) + "\n")
    if format == "sacct":
        rows = [sacct_line(1), *(sacct_line(job, submit="yesterday") for job in range(2, bad + 2))]
        return write(tmp_path / "t.sacct", SACCT_HEADER + "\n".join(rows) + "\n")
    pod = {
        "metadata": {"name": "p", "namespace": "nlp", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": 1}}}]},
        "status": {"startTime": "2024-01-01T00:01:00Z"},
    }
    broken = {**pod, "spec": {"containers": "none"}}
    items = [pod, *([broken] * bad)]
    return write(tmp_path / "pods.json", json.dumps({"kind": "List", "items": items}, indent=1))


@pytest.mark.parametrize("format", ["swf", "philly", "sacct", "kubectl"])
def test_the_skipped_lines_kept_are_capped_whatever_their_number(tmp_path: Path, format: str) -> None:
    path = many_bad_lines(tmp_path, format, bad=5_000)
    trace = read_trace(path, format=format, skip_bad_lines=True)
    assert (len(trace.jobs), trace.bad_lines, len(trace.skipped_lines)) == (1, 5_000, SKIPPED_LINES_LISTED)
    # plain (line, field, why) records in the order of the file; no error object is kept
    assert all(type(skipped) is SkippedLine for skipped in trace.skipped_lines)
    lines = [skipped.line for skipped in trace.skipped_lines]
    assert lines == sorted(lines) and len(set(lines)) == SKIPPED_LINES_LISTED


def test_swf_lines_read_one_by_one_keep_their_place(tmp_path: Path) -> None:
    """Bad lines make the SWF reader read the lines that look like numbers in one go and the others
    one by one: the jobs come out as from the same file without the bad lines, in the file's order,
    with their own line numbers, whichever way each line was read."""
    good = [swf_line(job) for job in range(1, 9)]
    good[3] = good[3].replace(" 600 ", " 6_00 ", 1)  # float() reads it, the fast path does not
    good[5] += " ; a comment after the fields"
    lines = [
        *SWF_HEADER.splitlines(),
        good[0],
        good[1],
        "; a comment",
        swf_line(90, run="x"),  # not a number
        good[2],
        good[3],
        "1 2 3",  # too few fields
        good[4],
        swf_line(91).replace(" 600 ", " 1e300 ", 1),  # out of range
        good[5],
        good[6],
        good[7],
    ]
    path = write(tmp_path / "t.swf", "\n".join(lines) + "\n")
    trace = read_swf(path, skip_bad_lines=True)
    clean = read_swf(
        write(tmp_path / "clean.swf", SWF_HEADER + "\n".join(good).replace("6_00", "600") + "\n")
    )
    assert trace.jobs.job_id.tolist() == list(range(1, 9))
    np.testing.assert_array_equal(trace.jobs.duration_s, clean.jobs.duration_s)
    assert trace.jobs.source_line.tolist() == [lines.index(line) + 1 for line in good]
    assert [(s.line, s.field) for s in trace.skipped_lines] == [
        (6, "field 4 (run time)"),
        (9, "field 4 (run time)"),  # the field after the last one found
        (11, "field 4 (run time)"),
    ]
    with pytest.raises(InputError, match=r"t.swf:6: field 4 \(run time\): expected a number, got 'x'"):
        read_swf(path)


# ---- item 6: team and user names ------------------------------------------------------------------------

ZERO_WIDTH_TEAM = "nl\u200bp"
RIGHT_TO_LEFT_USER = "\u202eecila"


def sacct_trace(tmp_path: Path, user: str, account: str) -> Path:
    rows = [
        sacct_line(1),
        sacct_line(2, user=user, account=account),
        sacct_line(3, user=user, account=account),
    ]
    return write(tmp_path / "t.sacct", SACCT_HEADER + "\n".join(rows) + "\n")


def helios_trace(tmp_path: Path, user: str, account: str) -> Path:
    rows = [helios_line(1), helios_line(2, user=user, vc=account), helios_line(3, user=user, vc=account)]
    return write(tmp_path / "h.csv", HELIOS_HEADER + "\n".join(rows) + "\n")


@pytest.mark.parametrize(
    ("trace", "user", "team", "field", "shown", "why"),
    [
        (sacct_trace, "alice", ZERO_WIDTH_TEAM, "Account", "'nl\\u200bp'", "U+200B ZERO WIDTH SPACE"),
        (sacct_trace, RIGHT_TO_LEFT_USER, "nlp", "User", "'\\u202eecila'", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        (helios_trace, "alice", ZERO_WIDTH_TEAM, "vc", "'nl\\u200bp'", "U+200B ZERO WIDTH SPACE"),
        (helios_trace, RIGHT_TO_LEFT_USER, "nlp", "user", "'\\u202eecila'", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ],
)
def test_a_team_or_user_that_is_no_name_is_refused_at_its_line(
    tmp_path: Path,
    trace: Callable[[Path, str, str], Path],
    user: str,
    team: str,
    field: str,
    shown: str,
    why: str,
) -> None:
    path = trace(tmp_path, user, team)
    message = cli_error("simulate", str(path), "--model", "slurm", "--out", str(tmp_path / "out"))
    # line 3: the first of the two lines holding the name (line 1 is the header)
    assert (
        f"error: {path}:3: {field}: expected a team or user name, got {shown}: it contains {why}" in message
    )
    assert "\u200b" not in message and "\u202e" not in message  # shown escaped, never as it is
    skipped = read_trace(path, skip_bad_lines=True)
    assert (len(skipped.jobs), skipped.bad_lines) == (1, 2)
    assert [(s.line, s.field) for s in skipped.skipped_lines] == [(3, field), (4, field)]


@pytest.mark.parametrize("name", ["nl p", "team/a", "nl\tp", "b\u00e9b\u00e9"])
def test_other_names_outside_the_rule_are_refused_too(tmp_path: Path, name: str) -> None:
    rows = [philly_line(job) for job in range(1, 200)] + [philly_line(200, cluster=name)]
    path = write(tmp_path / "p.csv", PHILLY_HEADER + "\n".join(rows) + "\n")
    with pytest.raises(InputError) as caught:
        read_philly(path)
    assert (caught.value.line, caught.value.field) == (201, "cluster")


def test_a_kubectl_namespace_is_a_name(tmp_path: Path) -> None:
    pod = {
        "metadata": {"name": "p", "namespace": ZERO_WIDTH_TEAM, "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": 1}}}]},
        "status": {"startTime": "2024-01-01T00:01:00Z"},
    }
    path = write(tmp_path / "pods.json", json.dumps({"kind": "List", "items": [pod]}, indent=1))
    with pytest.raises(InputError) as caught:
        read_kubectl_pods(path)
    named = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if '"name": "p"' in line)
    assert (caught.value.line, caught.value.field) == (named, "items[0].metadata.namespace")  # the pod's line
    assert "U+200B ZERO WIDTH SPACE" in caught.value.message


def test_names_in_the_rule_and_unknown_ones_read(tmp_path: Path) -> None:
    rows = [sacct_line(1, user="a.b-c_d", account="Team-1"), sacct_line(2, user="", account="")]
    trace: Trace = read_sacct(write(tmp_path / "t.sacct", SACCT_HEADER + "\n".join(rows) + "\n"))
    assert trace.jobs.user.values() == ["a.b-c_d", "unknown"]
    assert trace.jobs.team.values() == ["Team-1", "unknown"]


# ---- bad lines read again one by one read as the slow path reads them -------------------------------------


def sacct_with_every_kind_of_bad_line(tmp_path: Path) -> Path:
    rows = [
        sacct_line(1),
        sacct_line(2, submit="2024-13-45T10:00:00"),  # no such date
        sacct_line(3).replace("gres/gpu=2", "gres/gpu=two"),  # a TRES count that is no number
        "4|alice|nlp|gpu",  # too few columns
        sacct_line(5, account=ZERO_WIDTH_TEAM),  # a team that is no name
        sacct_line(6).replace("6|", "6.batch|", 1).replace("2024-01-01T11:00:00", "soon"),  # a step: not read
        sacct_line(7).replace("7|", "7_3|", 1),  # an array task
        sacct_line(8).replace("8|", "8_x|", 1),  # no job id
        "",
        sacct_line(9, user="bob"),
    ]
    return write(tmp_path / "t.sacct", SACCT_HEADER + "\n".join(rows) + "\n")


def philly_with_every_kind_of_bad_line(tmp_path: Path) -> Path:
    rows = [
        philly_line(1),
        philly_line(2, duration="x"),  # not a number
        philly_line(3, duration="1e400"),  # out of range
        "2017-10-03 10:03:00,60,2",  # too few columns
        philly_line(4, cluster=ZERO_WIDTH_TEAM),  # a team that is no name
        "yesterday,60,2,0,vc1",  # no date and time
        "2017-10-03 25:00:00,60,2,0,vc1",  # no such time
        "",
        philly_line(6, duration="+60"),  # a number, signed
        philly_line(7, cluster="vc2"),
    ]
    return write(tmp_path / "p.csv", PHILLY_HEADER + "\n".join(rows) + "\n")


SACCT_READER = "gpuplan.workload.sacct._SacctReader"
CSV_READER = "gpuplan.workload.csvcolumns._CsvReader"


@pytest.mark.parametrize(
    ("write_trace", "reader", "block_slowly", "expected"),
    [
        (sacct_with_every_kind_of_bad_line, SACCT_READER, "_slow", [3, 4, 5, 6, 9]),
        (philly_with_every_kind_of_bad_line, CSV_READER, "_read_slowly", [3, 4, 5, 6, 7, 8]),
    ],
)
def test_lines_read_again_one_by_one_read_as_the_slow_path_reads_them(
    tmp_path: Path, write_trace: Callable[[Path], Path], reader: str, block_slowly: str, expected: list[int]
) -> None:
    """The fast path keeps the block and reads only its bad lines again: as the slow path reads the
    whole block, line by line (the same jobs, the same error, the same lines skipped)."""
    path = write_trace(tmp_path)
    fast = f"{reader}._fast"
    not_the_whole_block = mock.patch(f"{reader}.{block_slowly}", side_effect=AssertionError("read slowly"))
    with not_the_whole_block, pytest.raises(InputError) as caught:
        read_trace(path)
    with mock.patch(fast, lambda self, block, line: None), pytest.raises(InputError) as slowly:
        read_trace(path)
    assert str(caught.value) == str(slowly.value) and caught.value.line == expected[0]
    with not_the_whole_block:
        trace = read_trace(path, skip_bad_lines=True)
    with mock.patch(fast, lambda self, block, line: None):
        slow = read_trace(path, skip_bad_lines=True)
    assert_same_traces(trace, slow)
    assert trace.skipped_lines == slow.skipped_lines
    assert [skipped.line for skipped in trace.skipped_lines] == expected
