"""Regression tests for what the fuzz suite (tests/cli/test_fuzz.py) found in the trace readers and the
demand-curve reader: every bad input is an InputError naming the file and a line or a field, never a
zlib, JSON, type or NumPy error, nor a warning (findings R3 to R14 of issue 13)."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuplan.errors import InputError
from gpuplan.inputs import InputOptions, cluster_nodes, load_input
from gpuplan.workload.demand import read_demand_csv
from gpuplan.workload.k8s_pods import read_kubectl_pods, read_node_list
from gpuplan.workload.readers import read_trace
from gpuplan.workload.swf import read_swf
from gpuplan.workload.textfile import read_bytes

from builders import DATA, gpuplan

FUZZ = DATA / "fuzz"
KUBECTL = DATA / "k8s_kubectl_pods.json"


def strictly(read: Callable[[], Any]) -> Any:
    """``read()`` with every warning an error, so none can reach a user's terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read()


def refused(read: Callable[[], Any]) -> InputError:
    """The InputError ``read()`` raises (with every warning an error)."""
    with pytest.raises(InputError) as caught:
        strictly(read)
    return caught.value


# ---- R3, R4, R8: gzip that is corrupt, truncated or not gzip ---------------------------------------------


def corrupt_mid_stream(payload: bytes) -> bytes:
    """``payload`` gzipped, with the first one-bit change from the middle of the deflate data on that
    makes zlib fail (rather than only the CRC-32 at the end)."""
    packed = gzip.compress(payload, mtime=0)
    for at in range(len(packed) // 2, len(packed) - 8):
        for bit in range(8):
            changed = bytearray(packed)
            changed[at] ^= 1 << bit
            try:
                gzip.decompress(bytes(changed))
            except zlib.error:
                return bytes(changed)
            except (OSError, EOFError):
                continue
    raise AssertionError("no one-bit change breaks the deflate data")


def line_of_fault(packed: bytes) -> int:
    """The line of the decompressed text where zlib fails, found independently of the reader: the
    compressed bytes fed one at a time, the line breaks of the output counted up to the fault."""
    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
    text = bytearray()
    for at in range(len(packed)):
        try:
            text += member.decompress(packed[at : at + 1])
        except zlib.error:
            return text.count(b"\n") + 1
    raise AssertionError("the data decompresses")


# Every reader that opens a .gz, each read through read_trace (so the format is told from the
# decompressed first line where the name does not tell it, as R4 failed).
GZIP_TRACES = [
    ("t.swf.gz", FUZZ / "small.swf"),
    ("philly.csv.gz", DATA / "philly_jobs_adaptdl_head60.csv"),
    ("helios.csv.gz", DATA / "helios_cluster_log.csv"),
    ("pods_pod_list.csv.gz", DATA / "k8s_alibaba_pod_list_sample.csv"),
    ("jobs.txt.gz", DATA / "sacct_awkward.txt"),
    ("pods.json.gz", KUBECTL),
]
GZIP_IDS = ["swf", "philly", "helios", "alibaba", "sacct", "kubectl"]


@pytest.mark.parametrize(("name", "source"), GZIP_TRACES, ids=GZIP_IDS)
def test_corrupt_gzip_data_names_the_line_where_it_breaks_off(
    tmp_path: Path, name: str, source: Path
) -> None:
    text = source.read_bytes()
    packed = corrupt_mid_stream(text)
    path = tmp_path / name
    path.write_bytes(packed)
    error = refused(lambda: read_trace(path))
    assert error.path == str(path) and error.message.startswith("cannot read: corrupt gzip data (")
    expected = line_of_fault(packed)
    assert 1 < expected <= text.count(b"\n")  # the fault is mid-text, so the count is what is tested
    assert error.line == expected


@pytest.mark.parametrize(("name", "source"), GZIP_TRACES, ids=GZIP_IDS)
def test_truncated_and_non_gzip_files_name_a_line(tmp_path: Path, name: str, source: Path) -> None:
    text = source.read_bytes()
    path = tmp_path / name
    path.write_bytes(text)  # not gzip at all
    error = refused(lambda: read_trace(path))
    assert (error.line, error.message) == (
        1,
        "cannot read: Not a gzipped file (gzip data starts with the bytes 1f 8b)",
    )
    cut = gzip.compress(text, mtime=0)[:-20]
    path.write_bytes(cut)
    error = refused(lambda: read_trace(path))
    assert "ends before its end-of-stream marker" in error.message
    assert error.line == zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut).count(b"\n") + 1


def test_a_gzip_checksum_or_trailing_garbage_names_the_end(tmp_path: Path) -> None:
    text = (FUZZ / "small.swf").read_bytes()
    packed = bytearray(gzip.compress(text, mtime=0))
    packed[-8] ^= 1  # the CRC-32, checked when all the text is out: the error names its last line
    path = tmp_path / "t.swf.gz"
    path.write_bytes(bytes(packed))
    error = refused(lambda: read_swf(path))
    assert "does not match its CRC-32" in error.message and error.line == text.count(b"\n")
    path.write_bytes(gzip.compress(text, mtime=0) + b"garbage")
    error = refused(lambda: read_swf(path))
    assert "after the end of the gzip stream is not gzip" in error.message
    # what gzip.GzipFile reads, reads the same: several members, then zero padding
    path.write_bytes(gzip.compress(text[:100]) + gzip.compress(text[100:]) + b"\0" * 16)
    assert read_bytes(path) == text
    assert len(read_swf(path).jobs) == len(read_swf(FUZZ / "small.swf").jobs)


def test_a_corrupt_node_list_and_demand_curve_name_the_line(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv.gz"
    nodes.write_bytes(corrupt_mid_stream((DATA / "k8s_alibaba_node_list_gpu_node.csv").read_bytes()))
    assert refused(lambda: read_node_list(nodes)).line == line_of_fault(nodes.read_bytes())
    demand = tmp_path / "demand.csv.gz"
    demand.write_bytes(gzip.compress((FUZZ / "demand.csv").read_bytes())[:-12])
    assert refused(lambda: read_demand_csv(demand)).line is not None


def test_a_node_list_without_nodes_names_a_line(tmp_path: Path) -> None:
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\n")
    error = refused(lambda: read_node_list(path))
    assert error.line == 2 and "no nodes in the node list" in error.message


# ---- R5, R6: kubectl JSON of the wrong shape ---------------------------------------------------------------


def kubectl(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    document = json.loads(KUBECTL.read_text())
    edit(document)
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(document, indent=1))
    return path


def name_line(path: Path, name: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if f'"{name}"' in line)


def set_at(*keys: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        target: Any = document
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


def field_path(keys: tuple[Any, ...]) -> str:
    """``metadata.ownerReferences[0].name`` for ("metadata", "ownerReferences", 0, "name")."""
    return "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in keys).lstrip(".")


CONTAINER = ("spec", "containers", 0)
TERMINATED = ("status", "containerStatuses", 0, "state", "terminated")
WRONG_TYPES = [
    (("metadata", "ownerReferences", 0, "name"), ["train-llm"], "text"),
    (("metadata", "ownerReferences", 0), "train-llm", "an object"),
    (("metadata", "ownerReferences"), {"kind": "Job"}, "a list"),
    (("metadata", "labels"), ["a"], "an object"),
    (("metadata", "labels", "batch.kubernetes.io/job-name"), 7, "text"),
    (("metadata", "namespace"), {"a": 1}, "text"),
    (("metadata", "creationTimestamp"), 1767607200, "text"),
    (("spec", "containers"), {"name": "x"}, "a list"),
    (CONTAINER, "trainer", "an object"),
    ((*CONTAINER, "resources"), [1], "an object"),
    ((*CONTAINER, "resources", "requests", "cpu"), [32], "a quantity"),
    (("status",), "Succeeded", "an object"),
    (("status", "phase"), 3, "text"),
    (("status", "startTime"), True, "text"),
    (("status", "containerStatuses", 0, "state"), "done", "an object"),
    ((*TERMINATED, "finishedAt"), {"t": 1}, "text"),
]


@pytest.mark.parametrize(
    ("keys", "value", "expected"), WRONG_TYPES, ids=[field_path(w[0]) for w in WRONG_TYPES]
)
def test_a_kubectl_field_of_the_wrong_type_names_its_path(
    tmp_path: Path, keys: tuple[Any, ...], value: Any, expected: str
) -> None:
    path = kubectl(tmp_path, set_at("items", 0, *keys, value=value))
    error = refused(lambda: read_kubectl_pods(path))
    assert error.field == f"items[0].{field_path(keys)}"
    assert error.line == name_line(path, "train-llm-worker-0")  # the line of the pod's name
    assert f"expected {expected}" in error.message
    skipped = strictly(lambda: read_kubectl_pods(path, skip_bad_lines=True))
    assert skipped.bad_lines == 1 and int(skipped.jobs.nodes.sum()) == 2  # the other pods still read


@pytest.mark.parametrize(
    ("second", "field", "words"),
    [
        ("[1, 2]", "items[1]", "expected an object, got a list ([1, 2])"),
        ('{"metadata": ["name"]}', "items[1].metadata", 'expected an object, got a list (["name"])'),
        ('{"metadata": {"name": 7}}', "items[1].metadata.name", "expected text, got the number 7"),
    ],
)
def test_a_kubectl_pod_without_a_name_names_the_line_it_starts(
    tmp_path: Path, second: str, field: str, words: str
) -> None:
    first = json.dumps(json.loads(KUBECTL.read_text())["items"][0])
    path = tmp_path / "pods.json"
    path.write_text('{"items": [\n' + first + ",\n" + second + "\n]}\n")
    error = refused(lambda: read_kubectl_pods(path))
    assert (error.line, error.field) == (3, field) and words in error.message


def test_an_integer_of_thousands_of_digits_is_a_bad_pod(tmp_path: Path) -> None:
    text = KUBECTL.read_text()
    path = tmp_path / "pods.json"
    path.write_text(text.replace('"uid": "1"', '"uid": ' + "7" * 5000, 1))
    error = refused(lambda: read_kubectl_pods(path))
    assert (error.line, error.field) == (9, "items[0].metadata.ownerReferences[0].uid")
    assert "an integer of 5,000 digits" in error.message
    assert strictly(lambda: read_kubectl_pods(path, skip_bad_lines=True)).bad_lines == 1
    # outside the items too: the line of the member that holds it
    path.write_text(
        text.replace('"kind": "List",', '"kind": "List", "metadata": {"n": ' + "7" * 5000 + "},", 1)
    )
    error = refused(lambda: read_kubectl_pods(path))
    assert (error.line, error.field) == (3, "metadata.n")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('{"items": []}\n{"items": []}\n', 2, "Extra data"),
        ('{"items": [], "items": []}', 1, "a second items list"),
        ('{\n"kind": "List",\n"items": {}\n}', 3, "expected a List with items"),
        ("[1, 2]", 1, "expected a List with items"),
        ('{"kind": "List"}', 1, "expected a List with items"),
        ('{"items": [\n{"metadata": }\n]}', 2, "not valid JSON"),
        ('{"items": [{}\n{}]}', 2, "Expecting ',' delimiter"),
    ],
)
def test_a_kubectl_document_that_is_no_list_names_its_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = tmp_path / "pods.json"
    path.write_text(text)
    error = refused(lambda: read_kubectl_pods(path))
    assert error.line == line and words in error.message


def test_kubectl_jobs_keep_the_line_of_their_first_pods_name(tmp_path: Path) -> None:
    """The name of a pod appears earlier in the file (a label of another pod): its own line is kept."""
    path = kubectl(tmp_path, set_at("items", 0, "metadata", "labels", "note", value="notebook-abc"))
    trace = read_kubectl_pods(path)
    assert trace.jobs.source_line.tolist() == [
        name_line(path, "train-llm-worker-0"),
        next(
            n for n, line in enumerate(path.read_text().splitlines(), 1) if '"name": "notebook-abc"' in line
        ),
    ]


# ---- R10: text that is not UTF-8 ---------------------------------------------------------------------------


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    lines = KUBECTL.read_bytes().split(b"\n")
    assert b'"research"' in lines[9]
    lines[9] = lines[9].replace(b"research", b"res\xffearch")
    path = tmp_path / "pods.json"
    path.write_bytes(b"\n".join(lines))
    error = refused(lambda: read_kubectl_pods(path))
    assert error.line == 10 and error.message.startswith("not UTF-8 text: byte 0xff at column ")
    demand = tmp_path / "demand.csv"
    demand.write_bytes(b"time_s,requests_per_s\n0,12\n3600,2\xff0\n")
    error = refused(lambda: read_demand_csv(demand))
    assert (error.line, error.field) == (3, "requests_per_s") and "not UTF-8" in error.message


# ---- R9, R11, R7: format, header and empty traces --------------------------------------------------------


def test_a_sacct_header_without_jobid_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_bytes((DATA / "sacct_awkward.txt").read_bytes().replace(b"JobID", b"Job", 1))
    error = refused(lambda: read_trace(path))
    assert (error.line, error.field) == (1, "JobID") and "cannot tell the trace format" in error.message
    other = tmp_path / "o.txt"
    other.write_text("some lines\n")
    assert (refused(lambda: read_trace(other)).line, refused(lambda: read_trace(other)).field) == (
        1,
        "--format",
    )


def swf_with_header(tmp_path: Path, old: str, new: str) -> Path:
    text = (FUZZ / "small.swf").read_text()
    assert old in text
    path = tmp_path / "t.swf"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("header", "field"),
    [
        ("; MaxProcs: 1000000000000", "MaxProcs"),
        ("; MaxProcs: 1e400", "MaxProcs"),  # int(float(...)) raised OverflowError
        ("; MaxProcs: nan", "MaxProcs"),
        ("; MaxProcs: -inf", "MaxProcs"),
        ("; MaxProcs: 64.5", "MaxProcs"),
        ("; UnixStartTime: " + "9" * 400, "UnixStartTime"),
    ],
)
def test_a_nonsense_swf_header_names_its_line(tmp_path: Path, header: str, field: str) -> None:
    path = swf_with_header(tmp_path, "; MaxProcs: 64", header)
    error = refused(lambda: read_swf(path))
    assert error.field == field and error.line == path.read_text().splitlines().index(header) + 1


def test_a_traced_cluster_beyond_any_machine_names_the_header_line(tmp_path: Path) -> None:
    path = swf_with_header(tmp_path, "; MaxProcs: 64", "; MaxProcs: 4000000")
    trace = read_swf(path)  # within the reader's bound (a machine of 4 M processors) ...
    error = refused(lambda: cluster_nodes(trace, None, 1))  # ... but 4 M nodes of one processor
    assert (error.line, error.field) == (
        path.read_text().splitlines().index("; MaxProcs: 4000000") + 1,
        "MaxProcs",
    )
    assert cluster_nodes(trace, None, 8) == (500_000, "header MaxProcs")


@pytest.mark.parametrize(
    ("name", "text", "skip", "why"),
    [
        ("t.swf", "; Version: 2.2\n", False, "it has no job lines"),
        ("p.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n", False, "it has no job lines"),
        ("t.swf", "; Version: 2.2\n1 2 3\nx\n", True, "2 malformed line(s) were skipped (--skip-bad-lines)"),
        (
            "p.csv",
            "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-03 10:00:00,60,0,0,vc1\nbad\n",
            True,
            "1 malformed line(s) were skipped (--skip-bad-lines); 1 job(s) with no run time or no GPUs were "
            "skipped",
        ),
    ],
)
@pytest.mark.parametrize("nodes", [None, 4])  # a cluster size given or not: there is nothing to simulate
def test_a_trace_without_jobs_is_refused(
    tmp_path: Path, name: str, text: str, skip: bool, why: str, nodes: int | None
) -> None:
    path = tmp_path / name
    path.write_text(text)
    error = refused(lambda: load_input(path, InputOptions(nodes=nodes, skip_bad_lines=skip)))
    # the line where the text ends: where a job line was looked for last
    assert (error.path, error.line, error.field) == (str(path), text.count("\n") + 1, None)
    assert error.message == f"no jobs in the file up to its end: {why}"


# ---- R12, R13, R14: the demand CSV of a service ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("", 1, "time_s", "missing column"),
        ("t,rps\n0,1\n", 1, "time_s", "missing column"),
        ("time_s,requests_per_s\n", 2, None, "at least two rows"),
        ("time_s,requests_per_s\n0,12\n", 3, None, "found one (line 2)"),
        ("time_s,requests_per_s\n0,12\n3600\n7200,45\n", 3, "requests_per_s", "expected 2 columns"),
        ("time_s,requests_per_s\n0,12\n1e309,15\n", 3, "time_s", "expected a number from 0"),
        ("time_s,requests_per_s\n0,12\n3600,nan\n", 3, "requests_per_s", "expected a number from 0"),
        ("time_s,requests_per_s\n0,12\n3600,-1\n", 3, "requests_per_s", "expected a number from 0"),
        ("time_s,requests_per_s\n0,12\n3600,2e9\n", 3, "requests_per_s", "to 1,000,000,000"),
        ("time_s,requests_per_s\n-5,12\n3600,1\n", 2, "time_s", "expected a number from 0"),
        ("time_s,requests_per_s\n0,12\n\n3600,1\n3600,4\n", 5, "time_s", "before's (3600 s at line 4)"),
        ("time_s,requests_per_s\n0,12\n7200,1\n3600,4\n", 4, "time_s", "got 3600"),
    ],
)  # fmt: skip
def test_a_bad_demand_csv_names_its_line_and_column(
    tmp_path: Path, text: str, line: int, field: str | None, words: str
) -> None:
    path = tmp_path / "demand.csv"
    path.write_text(text)
    error = refused(lambda: read_demand_csv(path))
    assert (error.path, error.line, error.field) == (str(path), line, field)
    assert words in error.message


def test_a_demand_csv_reads_by_column_name_and_repeats(tmp_path: Path) -> None:
    path = tmp_path / "demand.csv"
    path.write_text("note,requests_per_s,time_s\na,10,0\nb,50,43200\n")  # any order, other columns unread
    times, rates = strictly(lambda: read_demand_csv(path))
    assert times.tolist() == [0.0, 43200.0] and rates.tolist() == [10.0, 50.0]


def test_a_bad_demand_csv_of_a_scenario_exits_2_without_a_warning(tmp_path: Path) -> None:
    shutil.copy(FUZZ / "kubernetes-kueue.yaml", tmp_path / "k.yaml")
    (tmp_path / "demand.csv").write_text((FUZZ / "demand.csv").read_text().replace("21600,15", "1e309,15"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, _, err = gpuplan("inspect", str(tmp_path / "k.yaml"), "--out", str(tmp_path / "o"))
    assert code == 2 and f"{tmp_path / 'demand.csv'}:8: time_s: expected a number" in err
