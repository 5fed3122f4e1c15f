"""The OCI shape catalogue: every shape present and sourced, RDMA flags, unknown names, bad edits."""

from __future__ import annotations

import copy
import re
from importlib import resources
from typing import Any

import pytest
import yaml

from gpuplan.errors import InputError
from gpuplan.scenario.shapes import FIGURES, Shape, get_shape, load_catalogue, parse_catalogue

GPUS_PER_NODE = [
    pytest.param("BM.GPU.H100.8", 8, id="H100 bare metal has 8 GPUs"),
    pytest.param("BM.GPU.H200.8", 8, id="H200 bare metal has 8 GPUs"),
    pytest.param("BM.GPU.B200.8", 8, id="B200 bare metal has 8 GPUs"),
    pytest.param("BM.GPU.GB200.4", 4, id="GB200 bare metal has 4 GPUs"),
    pytest.param("BM.GPU.A100-v2.8", 8, id="A100 80GB bare metal has 8 GPUs"),
    pytest.param("BM.GPU4.8", 8, id="A100 40GB bare metal has 8 GPUs"),
    pytest.param("BM.GPU.L40S.4", 4, id="L40S bare metal has 4 GPUs"),
    pytest.param("BM.GPU.A10.4", 4, id="A10 bare metal has 4 GPUs"),
    pytest.param("VM.GPU.A10.1", 1, id="A10 VM with one GPU"),
    pytest.param("VM.GPU.A10.2", 2, id="A10 VM with two GPUs"),
    pytest.param("BM.GPU.MI300X.8", 8, id="MI300X bare metal has 8 GPUs"),
]
SHAPE_NAMES: list[str] = [str(param.values[0]) for param in GPUS_PER_NODE]

# As the cited sources state: in (true) or not in (false) the shapes Oracle's HPC stack offers
# for RDMA cluster networks.
RDMA = [
    pytest.param("BM.GPU.H100.8", True, id="H100 joins cluster networks"),
    pytest.param("BM.GPU.H200.8", True, id="H200 joins cluster networks"),
    pytest.param("BM.GPU.B200.8", True, id="B200 joins cluster networks"),
    pytest.param("BM.GPU.GB200.4", True, id="GB200 joins cluster networks"),
    pytest.param("BM.GPU.A100-v2.8", True, id="A100 80GB joins cluster networks"),
    pytest.param("BM.GPU4.8", True, id="A100 40GB joins cluster networks"),
    pytest.param("BM.GPU.L40S.4", True, id="L40S joins cluster networks"),
    pytest.param("BM.GPU.MI300X.8", True, id="MI300X joins cluster networks"),
    pytest.param("BM.GPU.A10.4", False, id="A10 bare metal has no cluster network"),
    pytest.param("VM.GPU.A10.1", False, id="one-GPU A10 VM has no cluster network"),
    pytest.param("VM.GPU.A10.2", False, id="two-GPU A10 VM has no cluster network"),
]

# Shape attribute for each figure path of the catalogue.
ATTRIBUTE = {
    "gpus_per_node": "gpus_per_node",
    "gpu_model": "gpu_model",
    "gpu_memory_gb": "gpu_memory_gb",
    "cpu_cores": "cpu_cores",
    "memory_gb": "memory_gb",
    "local_nvme_tb": "local_nvme_tb",
    "network.rdma_cluster_network": "rdma_cluster_network",
    "network.frontend_gbps": "frontend_network_gbps",
    "network.rdma_gbps": "rdma_network_gbps",
    "price_per_gpu_hour_usd": "price_per_gpu_hour_usd",
}
SOURCE = re.compile(r"^\S.* <https?://\S+> \(as of \d{4}-\d{2}-\d{2}\)$")


def raw_catalogue() -> Any:
    """The packaged catalogue as loaded YAML, private to the caller (safe to edit)."""
    text = resources.files("gpuplan.scenario").joinpath("data/oci_shapes.yaml").read_text(encoding="utf-8")
    return copy.deepcopy(yaml.safe_load(text))


def test_the_catalogue_holds_exactly_the_eleven_shapes() -> None:
    assert sorted(load_catalogue()) == sorted(SHAPE_NAMES)


@pytest.mark.parametrize(("name", "gpus"), GPUS_PER_NODE)
def test_gpus_per_node(name: str, gpus: int) -> None:
    shape = get_shape(name)
    assert isinstance(shape, Shape)
    assert shape.name == name
    assert shape.gpus_per_node == gpus


@pytest.mark.parametrize("name", SHAPE_NAMES, ids=lambda name: f"every figure of {name} has a dated source")
def test_every_figure_has_a_dated_source(name: str) -> None:
    shape = get_shape(name)
    for path, attribute in ATTRIBUTE.items():
        if getattr(shape, attribute) is not None:
            assert path in shape.sources, f"{name}: {path} has no source"
    for path, source in shape.sources.items():
        assert path in FIGURES
        assert SOURCE.match(source), f"{name}: {path}: {source!r}"


@pytest.mark.parametrize(("name", "rdma"), RDMA)
def test_rdma_flags_as_the_sources_state(name: str, rdma: bool) -> None:
    shape = get_shape(name)
    assert shape.rdma_cluster_network is rdma
    assert "cluster_network_shape" in shape.sources["network.rdma_cluster_network"]


@pytest.mark.parametrize("name", SHAPE_NAMES, ids=lambda name: f"GPU memory of {name} matches its model name")
def test_gpu_memory_matches_the_model_name(name: str) -> None:
    shape = get_shape(name)
    assert shape.gpu_memory_gb is not None
    assert shape.gpu_model.endswith(f" {shape.gpu_memory_gb:g}GB")


@pytest.mark.parametrize(
    ("typed", "suggestion"),
    [
        pytest.param("BM.GPU.H100", "BM.GPU.H100.8", id="missing GPU count suggests the H100 shape"),
        pytest.param("bm.gpu.mi300x.8", "BM.GPU.MI300X.8", id="wrong case suggests the MI300X shape"),
        pytest.param("BM.GPU.A100-V2.8", "BM.GPU.A100-v2.8", id="capital V suggests the A100 80GB shape"),
        pytest.param("BM.GPU.GB200", "BM.GPU.GB200.4", id="missing GPU count suggests the GB200 shape"),
    ],
)
def test_unknown_shape_suggests_the_closest_name(typed: str, suggestion: str) -> None:
    with pytest.raises(InputError) as caught:
        get_shape(typed)
    error = caught.value
    assert error.field == "shape"
    assert f"did you mean {suggestion!r}?" in error.message
    assert all(name in error.message for name in SHAPE_NAMES)
    assert str(error).startswith("shape: unknown OCI shape")


def test_unknown_shape_with_nothing_close_lists_the_known_shapes() -> None:
    with pytest.raises(InputError) as caught:
        get_shape("Standard.E5")
    assert "did you mean" not in caught.value.message
    assert "Known shapes: BM.GPU.A10.4, " in caught.value.message


def without_source(raw: Any) -> Any:
    del raw["shapes"]["BM.GPU.H200.8"]["sources"]["cpu_cores"]
    return raw


def zero_gpus(raw: Any) -> Any:
    raw["shapes"]["BM.GPU.B200.8"]["gpus_per_node"] = 0
    return raw


def undated_source(raw: Any) -> Any:
    raw["shapes"]["VM.GPU.A10.2"]["sources"]["memory_gb"] = {"url": "https://example.org", "title": "t"}
    return raw


def price_without_source(raw: Any) -> Any:
    raw["shapes"]["BM.GPU.H100.8"]["price_per_gpu_hour_usd"] = 10.0
    return raw


def figure_left_out(raw: Any) -> Any:
    del raw["shapes"]["BM.GPU4.8"]["local_nvme_tb"]
    return raw


def rdma_flag_as_text(raw: Any) -> Any:
    raw["shapes"]["BM.GPU.L40S.4"]["network"]["rdma_cluster_network"] = "yes"
    return raw


def misspelt_field(raw: Any) -> Any:
    raw["shapes"]["BM.GPU.A10.4"]["memory_gigabytes"] = 1024
    return raw


@pytest.mark.parametrize(
    ("edit", "shape", "path"),
    [
        pytest.param(without_source, "BM.GPU.H200.8", "cpu_cores", id="a figure without a source"),
        pytest.param(zero_gpus, "BM.GPU.B200.8", "gpus_per_node", id="a shape with no GPUs"),
        pytest.param(undated_source, "VM.GPU.A10.2", "sources.memory_gb", id="a source without a date"),
        pytest.param(
            price_without_source, "BM.GPU.H100.8", "price_per_gpu_hour_usd", id="a price without a source"
        ),
        pytest.param(figure_left_out, "BM.GPU4.8", "local_nvme_tb", id="a figure left out instead of null"),
        pytest.param(
            rdma_flag_as_text, "BM.GPU.L40S.4", "network.rdma_cluster_network", id="an RDMA flag as text"
        ),
        pytest.param(misspelt_field, "BM.GPU.A10.4", "memory_gigabytes", id="a misspelt field"),
    ],
)
def test_a_bad_edit_fails_loudly_naming_shape_and_field(edit: Any, shape: str, path: str) -> None:
    with pytest.raises(ValueError, match=rf"shape {re.escape(shape)}: {re.escape(path)}: "):
        parse_catalogue(edit(raw_catalogue()))


def test_the_packaged_catalogue_parses_as_loaded() -> None:
    assert parse_catalogue(raw_catalogue()) == load_catalogue()
