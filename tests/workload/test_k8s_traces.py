"""Kubernetes pod traces: the Alibaba 2023 pod list and node list, kubectl JSON dumps; mapping,
skipped pods, errors naming file, line and field; the node list found beside a pod list."""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.inputs import InputOptions, load_input
from gpuplan.sim.kubernetes.settings import node_list_pools
from gpuplan.workload.k8s_pods import (
    node_list_beside,
    quantity,
    read_alibaba_pods,
    read_kubectl_pods,
    read_node_list,
)
from gpuplan.workload.readers import detect_format

from builders import DATA

PODS = DATA / "k8s_alibaba_pod_list_sample.csv"
NODES = DATA / "k8s_alibaba_node_list_gpu_node.csv"
KUBECTL = DATA / "k8s_kubectl_pods.json"


def test_alibaba_pods_map_to_one_job_per_pod() -> None:
    trace = read_alibaba_pods(PODS)
    jobs = trace.jobs
    # 45 rows: 4 CPU-only pods and the pods never scheduled are skipped
    rows = list(csv.DictReader(PODS.open()))
    raw = {
        name: np.array([float(row[name]) if row[name] else np.nan for row in rows])
        for name in ("num_gpu", "gpu_milli", "cpu_milli", "creation_time", "deletion_time", "scheduled_time")
    }
    never = np.isnan(raw["scheduled_time"])
    cpu_only = raw["num_gpu"] == 0
    assert trace.skipped_invalid == int((never | cpu_only).sum()) and len(jobs) == 45 - trace.skipped_invalid
    kept = ~(never | cpu_only)
    assert jobs.submit_s.tolist() == raw["creation_time"][kept].tolist()
    expected_run = (raw["deletion_time"] - raw["scheduled_time"])[kept]
    assert jobs.duration_s.tolist() == expected_run.tolist()
    assert (jobs.nodes == 1).all() and jobs.gpus_per_node.tolist() == raw["num_gpu"][kept].tolist()
    assert trace.gpu_milli is not None and trace.cpu_milli is not None
    assert (
        trace.gpu_milli.tolist() == np.where(raw["num_gpu"][kept] == 1, raw["gpu_milli"][kept], 1000).tolist()
    )
    assert trace.cpu_milli.tolist() == raw["cpu_milli"][kept].tolist()
    assert set(jobs.team.values()) <= {"LS", "BE", "Burstable", "Guaranteed"}
    assert jobs.source_line.tolist() == (np.flatnonzero(kept) + 2).tolist()


def test_alibaba_format_is_told_by_the_header(tmp_path: Path) -> None:
    assert detect_format(PODS) == "alibaba"
    packed = tmp_path / "openb_pod_list_x.csv.gz"
    packed.write_bytes(gzip.compress(PODS.read_bytes()))
    assert detect_format(packed) == "alibaba"
    assert len(read_alibaba_pods(packed).jobs) == len(read_alibaba_pods(PODS).jobs)


def test_a_bad_alibaba_row_names_its_line_and_column(tmp_path: Path) -> None:
    lines = PODS.read_text().splitlines()
    cells = lines[5].split(",")
    cells[3] = "two"
    lines[5] = ",".join(cells)
    path = tmp_path / "bad_pod_list.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as error:
        read_alibaba_pods(path)
    assert (error.value.path, error.value.line, error.value.field) == (str(path), 6, "num_gpu")
    skipped = read_alibaba_pods(path, skip_bad_lines=True)
    assert skipped.bad_lines == 1 and len(skipped.jobs) == len(read_alibaba_pods(PODS).jobs) - 1


def test_node_list_and_its_pools() -> None:
    nodes = read_node_list(NODES)
    assert len(nodes.names) == 13 and nodes.names[0] == "openb-node-0000"
    pools = node_list_pools(nodes)
    assert [(p.name, p.nodes, p.gpus_per_node) for p in pools] == [
        ("p100-2gpu-64c", 1, 2),
        ("g2-8gpu-96c", 5, 8),
        ("t4-2gpu-104c", 7, 2),
    ]
    assert pools[1].node_names[0] == "openb-node-0100"


def test_a_bad_node_list_row_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,64000,1024,2,T4\nn2,64000,-5,2,T4\n")
    with pytest.raises(InputError) as error:
        read_node_list(path)
    assert (error.value.line, error.value.field) == (3, "memory_mib")


def test_the_node_list_beside_a_pod_list_is_found_and_used(tmp_path: Path) -> None:
    assert node_list_beside(PODS) == NODES
    assert node_list_beside(KUBECTL) is None
    loaded = load_input(PODS)
    assert loaded.node_list is not None and loaded.info["node_list"] == str(NODES)
    other = tmp_path / "mine.csv"
    other.write_text("sn,cpu_milli,memory_mib,gpu,model\nx-1,96000,393216,8,H100\n")
    chosen = load_input(PODS, InputOptions(node_list=other))
    assert chosen.node_list is not None and chosen.node_list.names == ("x-1",)
    with pytest.raises(InputError, match="no such file"):
        load_input(PODS, InputOptions(node_list=tmp_path / "missing.csv"))


def test_kubectl_pods_of_one_job_form_one_job() -> None:
    assert detect_format(KUBECTL) == "kubectl"
    trace = read_kubectl_pods(KUBECTL)
    jobs = trace.jobs
    assert trace.skipped_invalid == 1  # the CPU-only web pod
    assert len(jobs) == 2
    # the Job: 2 pods of 8 GPUs, created at 10:00:00 (t = 0), ran 2 h from the last start
    assert jobs.team.values() == ["research", "vision"]
    assert jobs.nodes.tolist() == [2, 1] and jobs.gpus_per_node.tolist() == [8, 1]
    assert jobs.submit_s.tolist() == [0.0, 3600.0]
    assert jobs.duration_s[0] == 2 * 3600.0
    # the notebook still runs: it runs until the latest time in the dump (12:03:00)
    assert jobs.duration_s[1] == 3750.0  # from its start at 11:00:30
    assert trace.header["still_running"] == "1"
    assert trace.cpu_milli is not None and trace.cpu_milli.tolist() == [32_000, 4_000]
    assert trace.memory_mib is not None and trace.memory_mib.tolist() == [256 * 1024, 32 * 1024]


def test_a_malformed_kubectl_pod_names_its_line_and_field(tmp_path: Path) -> None:
    document = json.loads(KUBECTL.read_text())
    document["items"][2]["metadata"]["creationTimestamp"] = "yesterday"
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(document, indent=2))
    with pytest.raises(InputError) as error:
        read_kubectl_pods(path)
    text = path.read_text().splitlines()
    assert error.value.line is not None and '"notebook-abc"' in text[error.value.line - 1]
    assert error.value.field == "items[2].metadata.creationTimestamp"
    assert read_kubectl_pods(path, skip_bad_lines=True).bad_lines == 1
    broken = tmp_path / "broken.json"
    broken.write_text('{"items": [\n  {"metadata": }\n]}')
    with pytest.raises(InputError) as error:
        read_kubectl_pods(broken)
    assert error.value.line == 2


@pytest.mark.parametrize(
    ("text", "value"), [("500m", 0.5), ("2", 2.0), ("16Gi", 16 * 1024**3), ("1k", 1000.0)]
)
def test_quantities(text: str, value: float) -> None:
    assert quantity(text) == value


def test_the_shared_alibaba_trace_reads_whole(shared_trace: Callable[[str], Path]) -> None:
    trace = read_alibaba_pods(shared_trace("k8s/alibaba_openb_pod_list_default.csv.gz"))
    assert len(trace.jobs) + trace.skipped_invalid == 8152
    nodes = read_node_list(shared_trace("k8s/alibaba_openb_node_list_gpu_node.csv"))
    assert len(nodes.names) == 1213 and int(nodes.gpus.sum()) == 6212
