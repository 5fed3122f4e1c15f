"""Figures no trace can mean (NaN, infinities, negative times and sizes, sizes past any machine) are
malformed lines in every format: an InputError naming file, line and field, or with skip_bad_lines a
skipped and counted line. No NumPy warning escapes a reader.

Each case takes a bundled fixture, puts one nonsense value into one line and reads it with warnings
turned into errors."""

from __future__ import annotations

import gzip
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuplan.errors import InputError
from gpuplan.workload.k8s_pods import read_kubectl_pods, read_node_list
from gpuplan.workload.readers import read_trace
from gpuplan.workload.trace import Trace

from builders import DATA, ROOT

SWF_EXAMPLE = ROOT / "examples" / "lublin_256_first2000.swf.gz"


def read_strictly(read: Callable[[], Trace]) -> Trace:
    """``read()`` with every warning an error, so none can reach a user's terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read()


def mutate_cell(source: Path, target: Path, line: int, column: str, value: str, sep: str = ",") -> Path:
    """``source`` with the cell of ``column`` on ``line`` (1-based; the header is line 1) replaced."""
    lines = source.read_text().splitlines()
    header = [name.strip() for name in lines[0].split(sep)]
    cells = lines[line - 1].split(sep)
    cells[header.index(column)] = value
    lines[line - 1] = sep.join(cells)
    target.write_text("\n".join(lines) + "\n")
    return target


# (format, fixture, line, column, nonsense value): the separator is "|" for sacct, "," otherwise
CSV_CASES = [
    ("alibaba", "k8s_alibaba_pod_list_sample.csv", 2, "cpu_milli", "1e308"),
    ("alibaba", "k8s_alibaba_pod_list_sample.csv", 3, "cpu_milli", "-Infinity"),
    ("alibaba", "k8s_alibaba_pod_list_sample.csv", 4, "creation_time", "-99999999999"),
    ("alibaba", "k8s_alibaba_pod_list_sample.csv", 5, "memory_mib", "nan"),
    ("alibaba", "k8s_alibaba_pod_list_sample.csv", 6, "num_gpu", "4096"),
    ("alibaba", "k8s_alibaba_pod_list_sample.csv", 7, "gpu_milli", "5000"),
    ("alibaba", "k8s_alibaba_pod_list_sample.csv", 8, "deletion_time", "1e20"),
    ("philly", "philly_jobs_adaptdl_head60.csv", 5, "duration", "-5"),
    ("philly", "philly_jobs_adaptdl_head60.csv", 6, "timestamp", "1960-01-01 00:00:00"),
    ("philly", "philly_jobs_adaptdl_head60.csv", 7, "num_gpus", "99999999"),
    ("chronus", "philly_chronus_mix1_rows180-219.csv", 5, "duration", "inf"),
    ("chronus", "philly_chronus_mix1_rows180-219.csv", 6, "submit_time", "-1"),
    ("helios", "helios_cluster_log.csv", 4, "cpu_num", "1e9"),
    ("helios", "helios_cluster_log.csv", 3, "submit_time", "1969-12-31 23:59:59"),
    ("helios", "helios_cluster_log.csv", 2, "duration", "-3"),
    ("acme", "acme_trace_seren.csv", 3, "node_num", "5000000"),
    ("acme", "acme_trace_kalos.csv", 3, "gpu_num", "-8"),
    ("sacct", "sacct_gpusim_22.05_slice.txt", 2, "Start", "1960-01-01T00:00:00"),
    ("sacct", "sacct_gpusim_22.05_slice.txt", 2, "Timelimit", "99999999-00:00:00"),
    ("sacct", "sacct_gpusim_22.05_slice.txt", 2, "AllocTRES", "cpu=1,gres/gpu=99999999,node=1"),
    ("sacct", "sacct_gpusim_22.05_slice.txt", 2, "NNodes", "999999999"),
    ("sacct", "sacct_gpusim_22.05_slice.txt", 2, "ReqTRES", "cpu=1,gres/gpu=8,mem=999999999999999P"),
]


@pytest.mark.parametrize(
    ("format", "fixture", "line", "column", "value"),
    CSV_CASES,
    ids=[f"{c[0]}-{c[3]}={c[4]}" for c in CSV_CASES],
)
def test_a_nonsense_figure_is_a_bad_line(
    tmp_path: Path, format: str, fixture: str, line: int, column: str, value: str
) -> None:
    sep = "|" if format == "sacct" else ","
    clean = read_strictly(lambda: read_trace(DATA / fixture, format=format))
    path = mutate_cell(DATA / fixture, tmp_path / fixture, line, column, value, sep)
    with pytest.raises(InputError) as caught:
        read_strictly(lambda: read_trace(path, format=format))
    assert str(caught.value).startswith(f"{path}:{line}: {column}: expected ")
    assert repr(value) in str(caught.value)
    skipped = read_strictly(lambda: read_trace(path, format=format, skip_bad_lines=True))
    assert skipped.bad_lines == 1
    assert line not in skipped.jobs.source_line.tolist()
    assert len(skipped.jobs) + skipped.skipped_invalid == len(clean.jobs) + clean.skipped_invalid - 1


def test_the_slow_path_names_the_same_bad_figure(tmp_path: Path) -> None:
    # A quoted cell sends the rest of the file through Python's csv module: the bound holds there too.
    lines = (DATA / "philly_jobs_adaptdl_head60.csv").read_text().splitlines()
    lines[2] = lines[2].replace(",1,", ',"1",', 1)
    lines[9] = "2017-10-09 06:56:58,-87.0,1,87.0,11cb48"
    path = tmp_path / "philly.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"philly.csv:10: duration: expected a number from 0 to "):
        read_strictly(lambda: read_trace(path, format="philly"))


SWF_LINE = "7 100 -1 60 4 -1 -1 4 600 -1 1 3 7 -1 -1 -1 -1 -1"  # a good job


@pytest.mark.parametrize(
    ("index", "value", "field"),
    [
        (3, "nan", "field 4 (run time)"),
        (3, "-inf", "field 4 (run time)"),
        (1, "-5", "field 2 (submit time)"),
        (1, "1e300", "field 2 (submit time)"),
        (7, "1e9", "field 8 (requested processors)"),
        (4, "-7", "field 5 (allocated processors)"),
        (9, "1e300", "field 10 (requested memory)"),
        (11, "1e30", "field 12 (user id)"),
        (17, "inf", "field 18 (think time)"),
    ],
)
def test_a_nonsense_swf_field_is_a_bad_line(tmp_path: Path, index: int, value: str, field: str) -> None:
    tokens = SWF_LINE.split()
    tokens[index] = value
    text = (
        "; MaxProcs: 64\n"
        + SWF_LINE
        + "\n"
        + " ".join(tokens)
        + "\n"
        + SWF_LINE.replace("7 100", "8 200")
        + "\n"
    )
    path = tmp_path / "t.swf"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_strictly(lambda: read_trace(path))
    assert str(caught.value).startswith(f"{path}:3: {field}: expected ")
    trace = read_strictly(lambda: read_trace(path, skip_bad_lines=True))
    assert (trace.bad_lines, trace.jobs.source_line.tolist()) == (1, [2, 4])


def test_a_negative_swf_run_time_stays_unknown(tmp_path: Path) -> None:
    # The archive's own logs hold such records (MetaCentrum-wagap-2013 line 4186): unknown run time,
    # a skipped job, not a malformed line.
    text = SWF_LINE + "\n" + SWF_LINE.replace(" 60 ", " -1359980917 ") + "\n"
    path = tmp_path / "t.swf"
    path.write_text(text)
    trace = read_strictly(lambda: read_trace(path))
    assert (len(trace.jobs), trace.skipped_invalid, trace.bad_lines) == (1, 1, 0)


def test_a_nonsense_node_is_an_error_naming_its_line(tmp_path: Path) -> None:
    # No line of a node list is skipped: a skipped node would shrink the cluster.
    source = DATA / "k8s_alibaba_node_list_gpu_node.csv"
    for column, value in (("cpu_milli", "-Infinity"), ("gpu", "100000"), ("memory_mib", "1e300")):
        path = mutate_cell(source, tmp_path / "nodes.csv", 3, column, value)
        with pytest.raises(InputError) as caught, warnings.catch_warnings():
            warnings.simplefilter("error")
            read_node_list(path)
        assert str(caught.value).startswith(f"{path}:3: {column}: expected ")


KUBECTL = DATA / "k8s_kubectl_pods.json"


def kubectl_with(tmp_path: Path, old: str, new: str) -> Path:
    """The kubectl fixture with the first ``old`` replaced by ``new`` (raw JSON text)."""
    text = KUBECTL.read_text()
    assert old in text
    path = tmp_path / "pods.json"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('"cpu": "32"', '"cpu": "-Infinity"', "items[0].spec.containers[0].resources.requests.cpu"),
        ('"cpu": "32"', '"cpu": 1e400', "items[0].spec.containers[0].resources.requests.cpu"),
        ('"memory": "256Gi"', '"memory": NaN', "items[0].spec.containers[0].resources.requests.memory"),
        ('"memory": "256Gi"', '"memory": "-1Gi"', "items[0].spec.containers[0].resources.requests.memory"),
        (
            '"nvidia.com/gpu": "8"',
            '"nvidia.com/gpu": 1' + "0" * 400,
            "items[0].spec.containers[0].resources.requests.nvidia.com/gpu",
        ),
        ('"cpu": "32"', '"cpu": "1e308"', "items[0].spec.containers[0].resources.requests.cpu"),
        (
            '"creationTimestamp": "2026-01-05T10:00:00Z"',
            '"creationTimestamp": "0001-01-01T00:00:00Z"',
            "items[0].metadata.creationTimestamp",
        ),
    ],
)
def test_a_nonsense_kubectl_figure_is_a_bad_pod(tmp_path: Path, old: str, new: str, field: str) -> None:
    clean = read_strictly(lambda: read_kubectl_pods(KUBECTL))
    path = kubectl_with(tmp_path, old, new)
    with pytest.raises(InputError) as caught:
        read_strictly(lambda: read_kubectl_pods(path))
    assert caught.value.path == str(path) and caught.value.field == field
    assert caught.value.line == 9  # the line of the pod's name
    skipped = read_strictly(lambda: read_kubectl_pods(path, skip_bad_lines=True))
    assert skipped.bad_lines == 1
    assert int(skipped.jobs.nodes.sum()) == int(clean.jobs.nodes.sum()) - 1  # one pod of the 2-pod job


def test_every_bundled_trace_reads_without_a_warning() -> None:
    for path, format in [
        (DATA / "k8s_alibaba_pod_list_sample.csv", "alibaba"),
        (KUBECTL, "kubectl"),
        (DATA / "philly_jobs_adaptdl_head60.csv", "philly"),
        (DATA / "philly_chronus_mix1_rows180-219.csv", "chronus"),
        (DATA / "helios_cluster_log.csv", "helios"),
        (DATA / "acme_trace_seren.csv", "acme"),
        (DATA / "acme_trace_kalos.csv", "acme"),
        (DATA / "sacct_awkward.txt", "sacct"),
        (DATA / "sacct_gpusim_22.05_slice.txt", "sacct"),
        (SWF_EXAMPLE, "swf"),
    ]:
        assert len(read_strictly(lambda p=path, f=format: read_trace(p, format=f)).jobs) > 0  # type: ignore[misc]


def test_the_cli_exits_2_and_no_numpy_warning_reaches_the_terminal(tmp_path: Path) -> None:
    # The example: gpuplan inspect on a pod list with cpu_milli=1e308, with Python turning
    # every RuntimeWarning into an error (as -W error does): exit 2 with file:line:field, no warning.
    path = mutate_cell(
        DATA / "k8s_alibaba_pod_list_sample.csv", tmp_path / "pods.csv", 2, "cpu_milli", "1e308"
    )
    command = [sys.executable, "-W", "error::RuntimeWarning", "-m", "gpuplan", "inspect", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "pods.csv:2: cpu_milli: expected a number from 0 to 65,536,000, got '1e308'" in " ".join(
        done.stderr.split()
    )
    assert "Warning" not in done.stderr and "Traceback" not in done.stderr
    skipped = subprocess.run(
        [*command, "--skip-bad-lines"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert skipped.returncode == 0, skipped.stderr
    assert "RuntimeWarning" not in skipped.stderr and "1 malformed line(s) were skipped" in skipped.stderr


def test_a_gzipped_trace_names_the_line_too(tmp_path: Path) -> None:
    lines = gzip.decompress(SWF_EXAMPLE.read_bytes()).decode().splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(";"))
    tokens = lines[first + 3].split()
    tokens[3] = "nan"
    lines[first + 3] = " ".join(tokens)
    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(InputError, match=rf"t.swf.gz:{first + 4}: field 4 \(run time\): expected a finite"):
        read_strictly(lambda: read_trace(path))
    assert read_strictly(lambda: read_trace(path, skip_bad_lines=True)).bad_lines == 1
