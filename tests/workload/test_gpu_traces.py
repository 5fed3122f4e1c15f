"""The GPU-cluster trace readers (Philly, Chronus, Helios/Acme): column mapping, skipped jobs, errors
that name file, line and column, the fast and slow paths agreeing, and the full shared traces."""

from __future__ import annotations

import gzip
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

from gpuplan.errors import InputError
from gpuplan.workload import csvcolumns
from gpuplan.workload.helios import read_helios, state_name
from gpuplan.workload.philly import read_chronus, read_philly
from gpuplan.workload.readers import READERS, detect_format, read_trace
from gpuplan.workload.trace import Trace

from builders import DATA, assert_same_traces

PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
CHRONUS_HEADER = (
    "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,"
    "expect_time_list,expect_value_list,best_effort,job_type\n"
)
HELIOS_HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
)
Reader = Callable[..., Trace]


def unix(text: str) -> float:
    """Unix time of an ISO 8601 time; one without a zone offset is UTC, as the readers read it."""
    stamp = datetime.fromisoformat(text)
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def write(tmp_path: Path, text: str, name: str = "philly.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    return path


def slow_only() -> AbstractContextManager[object]:
    """Make every block take the slow path (Python's csv module, row by row)."""
    return mock.patch.object(csvcolumns._CsvReader, "_fast", lambda self, block, line: None)


# -- Philly (Pollux/AdaptDL) ---------------------------------------------------------------------------------


def test_philly_columns_map_to_the_job_table() -> None:
    trace = read_philly(DATA / "philly_jobs_adaptdl_head60.csv")
    jobs = trace.jobs
    assert (trace.format, len(jobs), trace.skipped_invalid, trace.bad_lines) == ("philly", 60, 0, 0)
    earliest = unix("2017-09-29 07:58:32")  # row 3: the earliest submit in the slice
    assert trace.epoch_s == earliest
    assert jobs.job_id[:3].tolist() == [1, 2, 3]  # the file has no ids: data row numbers
    assert jobs.source_line[:3].tolist() == [2, 3, 4]
    assert jobs.submit_s[:3].tolist() == [
        unix("2017-10-09 07:01:55") - earliest,
        unix("2017-10-09 06:13:03") - earliest,
        0.0,
    ]
    assert jobs.duration_s[:3].tolist() == [66.0, 2951.0, 860662.0]
    assert jobs.team.values()[:3] == ["11cb48", "6214e9", "6c71a0"]
    assert set(jobs.user.values()) == {"unknown"}
    assert (jobs.kind.labels, jobs.qos.labels, jobs.state.labels) == (("batch",), ("",), ("unknown",))
    assert np.isnan(jobs.time_limit_s).all() and np.isnan(jobs.mem_per_node).all()
    assert (jobs.nodes[53], jobs.gpus_per_node[53]) == (1, 8)  # line 55: 8 GPUs
    four = read_philly(DATA / "philly_jobs_adaptdl_head60.csv", gpus_per_node=4).jobs
    assert (four.nodes[53], four.gpus_per_node[53]) == (2, 4)


def test_philly_rows_without_gpus_are_skipped_and_negative_durations_are_bad_lines(tmp_path: Path) -> None:
    rows = [
        "2017-10-09 07:00:10,60.0,1,60.0,a",
        "2017-10-09 07:00:00,60.0,0,0.0,a",  # no GPUs: skipped (and not the epoch)
        "2017-10-09 07:00:20,-1.0,2,-2.0,b",  # negative duration: no job can mean it
        "2017-10-09 07:00:30,0.0,12,0.0,b",
    ]
    path = write(tmp_path, PHILLY_HEADER + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match=r"philly.csv:4: duration: expected a number from 0 to "):
        read_philly(path)
    trace = read_philly(path, skip_bad_lines=True)
    assert (trace.skipped_invalid, trace.bad_lines) == (1, 1)
    assert trace.jobs.job_id.tolist() == [1, 4]  # row numbers stay those of the file
    assert trace.epoch_s == unix("2017-10-09 07:00:10")
    assert trace.jobs.submit_s.tolist() == [0.0, 20.0]
    assert trace.jobs.nodes.tolist() == [1, 2] and trace.jobs.gpus_per_node.tolist() == [1, 6]
    assert trace.jobs.team.labels == ("a", "b")


def test_a_philly_file_with_ids_and_users_uses_them(tmp_path: Path) -> None:
    text = "job_id,user,timestamp,duration,num_gpus,cluster\n7,alice,2017-10-09 07:00:00,5,1,vc\n"
    jobs = read_philly(write(tmp_path, text)).jobs
    assert (jobs.job_id.tolist(), jobs.user.values(), jobs.team.values()) == ([7], ["alice"], ["vc"])


def test_the_documented_error_example(tmp_path: Path) -> None:
    lines = (DATA / "philly_jobs_adaptdl_head60.csv").read_text().splitlines()
    lines[16] = "2017-10-09 06:56:58,87.0,x,87.0,11cb48"  # line 17
    path = write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        read_philly(path)
    assert str(caught.value) == f"{path}:17: num_gpus: expected a whole number, got 'x'"


GOOD = ["2017-10-09 07:00:00,60.0,1,60.0,a", "2017-10-09 07:01:00,30.0,2,60.0,b"]


@pytest.mark.parametrize(
    ("bad_row", "field", "message"),
    [
        ("2017-10-09 07:00:40,60.0,x,60.0,a", "num_gpus", "expected a whole number, got 'x'"),
        ("2017-10-09 07:00:40,60.0,1.5,90.0,a", "num_gpus", "expected a whole number, got '1.5'"),
        ("2017-10-09 07:00:40,60.0,,90.0,a", "num_gpus", "expected a whole number, got ''"),
        (
            "2017-10-09 07:00:40,60.0,1e12,60.0,a",
            "num_gpus",
            "expected a whole number from 0 to 16,777,216, got '1e12'",
        ),
        ("2017-10-09 07:00:40,ten,1,60.0,a", "duration", "expected a number, got 'ten'"),
        (
            "2017-10-09 07:00:40,nan,1,60.0,a",
            "duration",
            "expected a number from 0 to 8,589,934,592, got 'nan'",
        ),
        (
            "2017-10-09 25:00:40,60.0,1,60.0,a",
            "timestamp",
            "expected a date and time (YYYY-MM-DD HH:MM:SS), got '2017-10-09 25:00:40'",
        ),
        (
            "yesterday,60.0,1,60.0,a",
            "timestamp",
            "expected a date and time (YYYY-MM-DD HH:MM:SS), got 'yesterday'",
        ),
        ("2017-10-09 07:00:40,60.0,1", "gpu_time", "expected 5 columns as in the header, found 3"),
        ("2017-10-09 07:00:40,60.0,1,60.0,a,b", "column 6", "expected 5 columns as in the header, found 6"),
    ],
    ids=[
        "a word where a number belongs",
        "a fraction of a GPU",
        "an empty cell",
        "too many GPUs",
        "a word for a duration",
        "not a number",
        "hour 25",
        "not a timestamp",
        "a short row",
        "a long row",
    ],
)
@pytest.mark.parametrize("path_kind", ["fast", "slow"])
def test_a_malformed_philly_row_names_file_line_and_column(
    tmp_path: Path, bad_row: str, field: str, message: str, path_kind: str
) -> None:
    path = write(tmp_path, PHILLY_HEADER + GOOD[0] + "\n\n" + bad_row + "\n" + GOOD[1])  # bad row: line 4
    with slow_only() if path_kind == "slow" else nullcontext():
        with pytest.raises(InputError) as caught:
            read_philly(path)
        error = caught.value
        assert (error.path, error.line, error.field, error.message) == (str(path), 4, field, message)
        assert str(error) == f"{path}:4: {field}: {message}"
        trace = read_philly(path, skip_bad_lines=True)
    assert trace.bad_lines == 1
    assert trace.jobs.job_id.tolist() == [1, 3]  # the bad row keeps its number
    assert trace.jobs.source_line.tolist() == [2, 5]


def test_a_missing_column_is_an_error_even_when_skipping_bad_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "timestamp,duration,gpu_time,cluster\n2017-10-09 07:00:00,60.0,60.0,a\n")
    for skip in (False, True):
        with pytest.raises(InputError) as caught:
            read_philly(path, skip_bad_lines=skip)
        assert str(caught.value) == (
            f"{path}:1: num_gpus: missing column (the header has: timestamp, duration, gpu_time, cluster)"
        )
    empty = write(tmp_path, "", "empty.csv")
    with pytest.raises(
        InputError, match=r"empty.csv:1: timestamp: missing column \(the header has: no columns\)"
    ):
        read_philly(empty)


def test_a_header_alone_gives_no_jobs_and_columns_may_come_in_any_order(tmp_path: Path) -> None:
    trace = read_philly(write(tmp_path, "\ufeff" + PHILLY_HEADER))  # a byte-order mark too
    assert (len(trace.jobs), trace.epoch_s, trace.header["columns"]) == (0, None, PHILLY_HEADER.strip())
    text = "cluster,num_gpus,extra,timestamp,duration\r\nvc,2,?,2017-10-09 07:00:00,5\r\n"
    jobs = read_philly(write(tmp_path, text, "reordered.csv")).jobs
    assert (jobs.team.values(), jobs.gpus.tolist(), jobs.duration_s.tolist()) == (["vc"], [2], [5.0])


def test_line_numbers_hold_across_blocks_blank_lines_and_crlf(tmp_path: Path) -> None:
    rows = [f"2017-10-09 07:{i // 60:02d}:{i % 60:02d},{i}.0,{1 + i % 3},0,vc{i % 4}" for i in range(120)]
    lines = []
    for i, row in enumerate(rows):
        lines += [row, ""] if i % 7 == 0 else [row]
    bad_at = lines.index(rows[100])
    lines[bad_at] = rows[100].replace(",100.0,", ",oops,")
    path = write(tmp_path, PHILLY_HEADER.replace("\n", "\r\n") + "\r\n".join(lines) + "\r\n")
    expected_lines = [i + 2 for i, line in enumerate(lines) if line and i != bad_at]
    results = []
    for block in (64, 1 << 20):
        with mock.patch.object(csvcolumns, "BLOCK_BYTES", block):
            with pytest.raises(InputError) as caught:
                read_philly(path)
            assert (caught.value.line, caught.value.field) == (bad_at + 2, "duration")
            trace = read_philly(path, skip_bad_lines=True)
        assert trace.jobs.source_line.tolist() == expected_lines
        assert trace.jobs.job_id.tolist() == [i + 1 for i in range(120) if i != 100]
        results.append(trace)
    assert_same_traces(*results)


def test_quoted_fields_read_the_same_and_keep_line_numbers(tmp_path: Path) -> None:
    # the quoted cells are in gpu_time, which is not read: the cluster is a team, and a team's name
    # holds no comma or line break
    text = (
        PHILLY_HEADER
        + '2017-10-09 07:00:00,60.0,1,"60,0","vc-a"\n2017-10-09 07:00:01,1,1,"multi\nline",vc-b\n'
    )
    text += "2017-10-09 07:00:02,x,1,1,c\n"
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=r"philly.csv:5: duration: expected a number, got 'x'"):
        read_philly(path)
    trace = read_philly(path, skip_bad_lines=True)
    assert trace.jobs.team.values() == ["vc-a", "vc-b"]
    assert trace.jobs.source_line.tolist() == [2, 3]


def test_gzip_missing_and_broken_files(tmp_path: Path) -> None:
    text = (DATA / "philly_jobs_adaptdl_head60.csv").read_text()
    assert_same_traces(
        read_philly(write(tmp_path, text, "t.csv.gz")), read_philly(DATA / "philly_jobs_adaptdl_head60.csv")
    )
    with pytest.raises(InputError, match=r"absent\.csv: no such file"):
        read_philly(tmp_path / "absent.csv")
    broken = write(tmp_path, "not gzip", "broken.csv")
    broken.rename(tmp_path / "broken.csv.gz")
    with pytest.raises(InputError, match="cannot read: Not a gzipped file"):
        read_philly(tmp_path / "broken.csv.gz")
    truncated = tmp_path / "truncated.csv.gz"
    truncated.write_bytes(gzip.compress(text.encode())[:-20])
    with pytest.raises(InputError, match="cannot read"):
        read_philly(truncated)
    with pytest.raises(InputError, match="--gpus-per-node: must be at least 1"):
        read_philly(DATA / "philly_jobs_adaptdl_head60.csv", gpus_per_node=0)


# -- Chronus -------------------------------------------------------------------------------------------------


def test_chronus_columns_map_to_the_job_table() -> None:
    trace = read_chronus(DATA / "philly_chronus_mix1_rows180-219.csv")
    jobs = trace.jobs
    assert (trace.format, len(jobs), trace.skipped_invalid, trace.epoch_s) == ("chronus", 39, 1, None)
    assert 195 not in jobs.job_id.tolist()  # num_gpu 0
    assert jobs.job_id[:5].tolist() == [179, 180, 181, 182, 183]
    assert jobs.submit_s[:3].tolist() == [17461.0, 17582.0, 12312.0]  # seconds, as in the file
    assert jobs.duration_s[:3].tolist() == [78.0, 46.0, 23.0]
    assert jobs.user.values()[:2] == jobs.team.values()[:2] == ["vc_b436b2", "vc_e13805"]
    assert jobs.qos.values()[:5] == ["slo", "slo", "slo", "slo", "best-effort"]
    eight = jobs.job_id.tolist().index(189)
    assert (jobs.nodes[eight], jobs.gpus_per_node[eight]) == (1, 8)
    assert set(jobs.kind.values()) == {"batch"} and np.isnan(jobs.time_limit_s).all()


def test_chronus_qos_from_job_type_and_its_errors(tmp_path: Path) -> None:
    without = "job_id,user,num_gpu,submit_time,duration,job_type\n0,vc_a,1,5,10,best\n1,vc_b,2,6,10,strict\n"
    assert read_chronus(write(tmp_path, without)).jobs.qos.values() == ["best-effort", "slo"]
    neither = write(tmp_path, "job_id,user,num_gpu,submit_time,duration\n0,vc_a,1,5,10\n", "neither.csv")
    with pytest.raises(InputError, match=r"neither.csv:1: best_effort: missing column"):
        read_chronus(neither, skip_bad_lines=True)
    two = write(tmp_path, CHRONUS_HEADER + "0,vc_a,1,5,100,m,10,1,1,10,2,best\n", "two.csv")
    with pytest.raises(InputError, match=r"two.csv:2: best_effort: expected 0 or 1, got '2'"):
        read_chronus(two)


# -- Helios and Acme -----------------------------------------------------------------------------------------


def test_helios_columns_map_to_the_job_table() -> None:
    trace = read_helios(DATA / "helios_cluster_log.csv")
    jobs = trace.jobs
    assert (trace.format, trace.skipped_invalid, trace.bad_lines) == (
        "helios",
        2,
        0,
    )  # a CPU job, a never-run one
    assert trace.epoch_s == unix("2020-06-09 18:40:00")  # job 1425516, not the first row
    assert jobs.job_id.tolist() == [1425511, 1425512, 1425513, 1425515, 1425516, 1425517, 1425519]
    assert jobs.source_line.tolist() == [2, 3, 4, 6, 7, 8, 11]  # line 9 is blank
    assert jobs.submit_s.tolist() == [61.0, 87.0, 88.0, 190.0, 0.0, 300.0, 420.0]
    # end - start where both are given: 1425517's duration column says 999, its times 100 s
    assert jobs.duration_s.tolist() == [36848.0, 249.0, 675233.0, 86400.0, 600.0, 100.0, 0.0]
    assert jobs.nodes.tolist() == [1, 1, 1, 2, 3, 1, 1]  # node_num where given
    assert jobs.gpus_per_node.tolist() == [1, 4, 1, 8, 4, 2, 3]
    assert jobs.cpus_per_node.tolist() == [1, 16, 1, 32, 8, 4, 0]
    assert jobs.team.values() == [
        "vcJkd",
        "vchbv",
        "vcpDC",
        "vchbv",
        "vcpDC",
        "uAbCd",
        "vcJkd",
    ]  # vc, else user
    assert jobs.user.values()[:3] == ["uXBbc", "uVMrF", "uzqls"]
    assert jobs.state.values() == [
        "completed",
        "failed",
        "cancelled",
        "timeout",
        "node_fail",
        "completed",
        "completed",
    ]


def test_acme_seren_reads_zone_offsets() -> None:
    trace = read_trace(DATA / "acme_trace_seren.csv", format="acme", gpus_per_node=8)
    jobs = trace.jobs
    assert (trace.format, trace.skipped_invalid) == ("acme", 1)  # the CPU job
    assert trace.epoch_s == unix("2023-02-28 16:10:00")  # 00:10 at +08:00
    assert jobs.job_id.tolist() == [5778432, 5778469, 5778470, 5778472, 5778473]
    assert jobs.submit_s.tolist() == [502.0, 838.0, 0.0, 960.0, 1020.0]
    assert jobs.duration_s.tolist() == [117.0, 2693.0, 7200.0, 45.0, 3600.0]  # 45: no start/end, the column
    assert jobs.nodes.tolist() == [1, 1, 4, 1, 2] and jobs.gpus_per_node.tolist() == [8, 8, 8, 1, 5]
    assert jobs.team.values() == jobs.user.values()  # Acme has no VCs
    assert jobs.state.values() == ["failed", "completed", "cancelled", "cancelled", "timeout"]


def test_acme_kalos_text_ids_become_row_numbers() -> None:
    trace = read_helios(DATA / "acme_trace_kalos.csv")
    jobs = trace.jobs
    assert jobs.job_id.tolist() == [1, 2, 3]
    # Kalos's duration column counts from submit (18, 82, 605); the run is end - start
    assert jobs.duration_s.tolist() == [8.0, 70.0, 600.0]
    assert jobs.nodes.tolist() == [8, 8, 1] and jobs.gpus_per_node.tolist() == [8, 8, 4]
    assert jobs.cpus_per_node.tolist() == [120, 120, 60]
    assert trace.epoch_s == unix("2023-05-17 11:00:58+00:00")


def test_helios_times_in_seconds(tmp_path: Path) -> None:
    text = "job_id,user,vc,gpu_num,state,submit_time,start_time,end_time\n1,u,vc,1,COMPLETED,100,150,250\n"
    text += "2,u,vc,2,FAILED,50,60,65.5\n3,u,vc,1,COMPLETED,7,8,late\n"
    path = write(tmp_path, text, "seconds.csv")
    with pytest.raises(
        InputError, match=r"seconds.csv:4: end_time: expected a number of seconds, got 'late'"
    ):
        read_helios(path)
    trace = read_helios(path, skip_bad_lines=True)
    assert (trace.epoch_s, trace.bad_lines) == (None, 1)
    assert trace.jobs.submit_s.tolist() == [100.0, 50.0] and trace.jobs.duration_s.tolist() == [100.0, 5.5]


def test_helios_header_and_row_errors(tmp_path: Path) -> None:
    no_run = write(
        tmp_path, "job_id,user,gpu_num,state,submit_time,start_time\n1,u,1,COMPLETED,5,6\n", "a.csv"
    )
    with pytest.raises(InputError, match=r"a.csv:1: duration: missing column"):
        read_helios(no_run)
    bad_time = "1,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-31 00:00:00,5,0\n"
    path = write(tmp_path, HELIOS_HEADER + bad_time, "b.csv")
    with pytest.raises(InputError) as caught:
        read_helios(path)
    assert str(caught.value) == (
        f"{path}:2: end_time: expected a date and time (YYYY-MM-DD HH:MM:SS), got '2020-06-31 00:00:00'"
    )


@pytest.mark.parametrize(
    ("raw", "state"),
    [
        ("COMPLETED", "completed"),
        ("FAILED", "failed"),
        ("CANCELLED", "cancelled"),
        ("canceled", "cancelled"),
        ("CANCELLED by 1234", "cancelled"),
        ("TIMEOUT", "timeout"),
        ("NODE_FAIL", "node_fail"),
        ("Pass", "completed"),
        ("Killed", "cancelled"),
        ("", "unknown"),
    ],
)
def test_state_names(raw: str, state: str) -> None:
    assert state_name(raw) == state


# -- registry ------------------------------------------------------------------------------------------------


def test_formats_are_registered_and_csv_formats_are_told_by_their_header(tmp_path: Path) -> None:
    assert {"swf", "philly", "chronus", "helios", "acme"} <= set(READERS)
    assert READERS.get("acme") is READERS.get("helios")
    for fixture, expected in [
        ("philly_jobs_adaptdl_head60.csv", "philly"),
        ("philly_chronus_mix1_rows180-219.csv", "chronus"),
        ("helios_cluster_log.csv", "helios"),
        ("acme_trace_seren.csv", "helios"),
        ("acme_trace_kalos.csv", "helios"),
    ]:
        assert detect_format(DATA / fixture) == expected, fixture
    unknown = tmp_path / "other.csv"
    unknown.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(InputError) as caught:
        detect_format(unknown)
    assert "give --format (philly, chronus, helios, alibaba)" in str(caught.value) and caught.value.line == 1
    with pytest.raises(InputError, match="known endings"):
        detect_format(tmp_path / "trace.txt")
    trace = read_trace(DATA / "philly_chronus_mix1_rows180-219.csv", format="chronus", gpus_per_node=8)
    assert trace.format == "chronus"


# -- the fast and slow paths agree ---------------------------------------------------------------------------

FIXTURES = [
    (read_philly, "philly_jobs_adaptdl_head60.csv"),
    (read_chronus, "philly_chronus_mix1_rows180-219.csv"),
    (read_helios, "helios_cluster_log.csv"),
    (read_helios, "acme_trace_seren.csv"),
    (read_helios, "acme_trace_kalos.csv"),
]


@pytest.mark.parametrize(("reader", "name"), FIXTURES, ids=[name for _, name in FIXTURES])
def test_the_slow_path_reads_what_the_fast_path_reads(reader: Reader, name: str) -> None:
    fast = reader(DATA / name)
    with slow_only():
        slow = reader(DATA / name)
    assert_same_traces(fast, slow)


# -- the full shared traces ----------------------------------------------------------------------------------


def test_the_full_philly_trace(shared_trace: Callable[[str], Path]) -> None:
    trace = read_philly(shared_trace("gpu/philly_jobs_adaptdl.csv.gz"))
    jobs = trace.jobs
    assert (len(jobs), trace.skipped_invalid, trace.bad_lines) == (82_247, 0, 0)
    assert trace.epoch_s == unix("2017-09-04 10:30:41")
    assert jobs.submit_s.min() == 0.0
    assert jobs.submit_s.max() == unix("2017-12-22 08:02:11") - unix("2017-09-04 10:30:41")
    assert jobs.source_line[-1] == 82_248  # the file ends with a blank line
    assert len(jobs.team.labels) == 15
    assert int(jobs.gpus.sum()) == 107_235  # every GPU count splits exactly on 8-GPU nodes
    assert Counter(jobs.gpus.tolist())[1] == 76_627


def test_the_full_chronus_trace(shared_trace: Callable[[str], Path]) -> None:
    trace = read_chronus(shared_trace("gpu/philly_chronus_mix1.csv.gz"))
    jobs = trace.jobs
    assert len(jobs) + trace.skipped_invalid == 30_940
    assert (trace.skipped_invalid, trace.bad_lines) == (184, 0)  # rows with num_gpu 0
    assert Counter(jobs.qos.values()) == {"slo": 21_600, "best-effort": 9_156}
    assert (jobs.submit_s.min(), jobs.submit_s.max()) == (1.0, 20_151.0)
    assert len(jobs.team.labels) == 11


# -- any input gives a trace or an InputError ----------------------------------------------------------------

READERS_BY_NAME: dict[str, Reader] = {"philly": read_philly, "chronus": read_chronus, "helios": read_helios}
HEADERS = {
    "philly": PHILLY_HEADER,
    "chronus": CHRONUS_HEADER,
    "helios": HELIOS_HEADER,
    "acme": "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration\n",
}
CELLS = st.sampled_from(
    [
        "",
        " ",
        "0",
        "1",
        "-1",
        "8",
        "2.5",
        "1e400",
        "nan",
        "x",
        "vc_a",
        "best",
        '"q"',
        '"a,b"',
        '"a\nb"',
        '"',
        "\r",
        "\x00",
        "\u00e9",
        "2020-06-09 18:41:01",
        "2023-03-01 00:18:22+08:00",
        "2020-02-30 00:00:00",
        "2020-06-09",
        "100",
    ]
) | st.text(max_size=4)
ROWS = st.lists(st.lists(CELLS, max_size=13).map(",".join), max_size=10)


# Cells that mostly parse, in the spellings the fast and slow paths must read alike.
GOOD_CELLS = {
    "time": st.sampled_from(
        [
            "2020-06-09 18:41:01",
            "2020-06-09T18:41:01.5",
            " 2020-06-09 18:41:01 ",
            "2020-06-09",
            "2023-03-01 00:18:22+08:00",
            "2023-03-01 00:18:22Z",
            "2020-06-09 18:41",
            "0000-01-01 00:00:00",
            "2020-06-09T18:41:01+00:60",
            "",
        ]
    ),
    "number": st.sampled_from(["0", "60.0", "-1", " 5", "1e3", "1_000", "+7", ".5", "", "inf"]),
    "whole": st.sampled_from(["0", "1", "8", "2.0", "-3", " 4 ", "12", "", "1.5"]),
    "flag": st.sampled_from(["0", "1", "1.0", "2"]),
    "text": st.sampled_from(["a", "vc_x", "", " b\t", "COMPLETED", "canceled", "é", "\u3000c\x1c"]),
    "id": st.sampled_from(["1", "007", "x1", " 12 ", "99999999999999999999"]),
}
LAYOUTS = {  # the kinds of the columns of HEADERS, by their initials
    "philly": "tnwnx",
    "chronus": "ixwnnxnnxxfx",
    "helios": "ixxwwwxtttnn",
    "acme": "ixwwwxxtttn",
}
KINDS = {"t": "time", "n": "number", "w": "whole", "f": "flag", "x": "text", "i": "id"}


@st.composite
def mostly_good_rows(draw: st.DrawFn, layout: str) -> list[str]:
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        cells = [draw(GOOD_CELLS[KINDS[kind]]) for kind in LAYOUTS[layout]]
        if draw(st.integers(0, 4)) == 0:  # now and then a cell from anywhere
            cells[draw(st.integers(0, len(cells) - 1))] = draw(CELLS)
        rows.append(",".join(cells))
    return rows


def read_or_error(reader: Reader, path: Path, skip: bool) -> Trace | str:
    try:
        trace = reader(path, skip_bad_lines=skip)
    except InputError as error:
        return str(error)
    assert isinstance(trace, Trace)
    return trace


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(READERS_BY_NAME)),
    data=st.binary(max_size=400),
    wrapping=st.sampled_from(["plain", "gzip", "not gzip"]),
    block=st.sampled_from([16, 1 << 20]),
)
def test_random_bytes_give_a_trace_or_an_input_error(
    name: str, data: bytes, wrapping: str, block: int
) -> None:
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(csvcolumns, "BLOCK_BYTES", block):
        path = Path(folder) / ("t.csv" if wrapping == "plain" else "t.csv.gz")
        path.write_bytes(gzip.compress(data) if wrapping == "gzip" else data)
        for skip in (False, True):
            read_or_error(READERS_BY_NAME[name], path, skip)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=st.sampled_from(sorted(HEADERS)),
    rows=ROWS,
    skip=st.booleans(),
    block=st.sampled_from([16, 1 << 20]),
)
def test_random_rows_give_a_trace_or_an_input_error_and_both_paths_agree(
    header: str, rows: list[str], skip: bool, block: int
) -> None:
    check_both_paths(header, rows, skip, block)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), header=st.sampled_from(sorted(HEADERS)), skip=st.booleans())
def test_mostly_good_rows_read_alike_on_both_paths(data: st.DataObject, header: str, skip: bool) -> None:
    rows = data.draw(mostly_good_rows(header))
    check_both_paths(header, rows, skip, data.draw(st.sampled_from([16, 1 << 20])))


def check_both_paths(header: str, rows: list[str], skip: bool, block: int) -> None:
    """The file reads (or fails) the same on the fast path as row by row."""
    reader = READERS_BY_NAME["helios" if header == "acme" else header]
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(csvcolumns, "BLOCK_BYTES", block):
        path = Path(folder) / "t.csv"
        path.write_text(HEADERS[header] + "\n".join(rows) + "\n", encoding="utf-8")
        fast = read_or_error(reader, path, skip)
        with slow_only():
            slow = read_or_error(reader, path, skip)
    if isinstance(fast, str) or isinstance(slow, str):
        assert fast == slow
    else:
        assert_same_traces(fast, slow)
