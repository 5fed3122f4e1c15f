"""The SWF reader: field mapping, header, skipped jobs, and errors that name file, line and field."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.workload.swf import read_swf

HEADER = "; Version: 2.2\n; MaxNodes: 64\n; MaxProcs: 128\n"
#         id sub wait run alloc cpu mem req reqtime reqmem st user group exe queue part prec think
LINES = [
    "1    0   -1  100   4   -1  -1  8   200   -1  1  3  7  -1  2  1  -1 -1",  # field 8 wins: 8 procs
    "2   10   -1   50   6   -1  -1 -1    -1  512  1  4  -1  -1 -1 -1  -1 -1",  # field 8 unset: 6 procs
    "3   20   -1   -1   2   -1  -1  2   100   -1  5  3  7  -1 -1 -1  -1 -1",  # run time < 0: skipped
    "4   30   -1   10   0   -1  -1  0   100   -1  0  3  7  -1 -1 -1  -1 -1",  # no processors: skipped
]


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_fields_map_to_the_job_table(tmp_path: Path) -> None:
    trace = read_swf(write(tmp_path, HEADER + "\n".join(LINES) + "\n"))
    jobs = trace.jobs
    assert (trace.capacity_gpus, trace.capacity_source) == (128, "header MaxProcs")
    assert jobs.job_id.tolist() == [1, 2]
    assert jobs.nodes.tolist() == [8, 6]  # requested processors, else allocated
    assert jobs.submit_s.tolist() == [0.0, 10.0]
    assert jobs.duration_s.tolist() == [100.0, 50.0]
    assert jobs.time_limit_s[0] == 200.0 and np.isnan(jobs.time_limit_s[1])
    assert jobs.team.values() == ["g7", "u4"]  # group when known, else user
    assert jobs.user.values() == ["u3", "u4"]
    assert jobs.qos.values() == ["2", ""]
    assert jobs.state.values() == ["completed", "completed"]
    assert jobs.source_line.tolist() == [4, 5]
    assert trace.skipped_invalid == 2


def test_processors_group_into_nodes_of_gpus(tmp_path: Path) -> None:
    jobs = read_swf(write(tmp_path, HEADER + "\n".join(LINES)), gpus_per_node=4).jobs
    assert jobs.nodes.tolist() == [2, 2]  # 8 -> 2 x 4; 6 -> 2 x 3
    assert jobs.gpus_per_node.tolist() == [4, 3]


def test_gzip_and_extra_fields_are_read(tmp_path: Path) -> None:
    # Alea's extended SWF appends a node list, a queue name and a resource spec.
    text = LINES[0] + " {12,12,12} q_1d 1:ppn=8\n" + LINES[1] + "\n"
    trace = read_swf(write(tmp_path, text, "t.swf.gz"))
    assert trace.jobs.job_id.tolist() == [1, 2]
    assert trace.capacity_gpus is None


@pytest.mark.parametrize(
    ("bad_line", "field", "message"),
    [
        (
            "5 40 -1 ten 2 -1 -1 2 100 -1 1 3 7 -1 -1 -1 -1 -1",
            "field 4 (run time)",
            "expected a number, got 'ten'",
        ),
        ("5 40 -1 10 2 -1 -1 2 100 -1 1 3 7", "field 14 (executable number)", "expected 18 fields, found 13"),
    ],
    ids=["a word where a number belongs", "a truncated line"],
)
def test_a_malformed_line_names_file_line_and_field(
    tmp_path: Path, bad_line: str, field: str, message: str
) -> None:
    path = write(tmp_path, HEADER + "\n".join([LINES[0], "; a comment", bad_line, LINES[1]]) + "\n")
    with pytest.raises(InputError) as caught:
        read_swf(path)
    error = caught.value
    assert (error.path, error.line, error.field, error.message) == (str(path), 6, field, message)
    assert str(error) == f"{path}:6: {field}: {message}"
    trace = read_swf(path, skip_bad_lines=True)
    assert trace.bad_lines == 1
    assert trace.jobs.job_id.tolist() == [1, 2]
    assert trace.jobs.source_line.tolist() == [4, 7]


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_swf(tmp_path / "absent.swf")
    trace = read_swf(write(tmp_path, HEADER))
    assert len(trace.jobs) == 0
    broken = tmp_path / "broken.swf.gz"
    broken.write_text("not gzip")
    with pytest.raises(InputError, match="cannot read: Not a gzipped file"):
        read_swf(broken)
