"""The OCI shape catalogue: every shape present and sourced, list prices, pricing terms, RDMA flags,
unknown names, bad edits."""

from __future__ import annotations

import copy
import re
from importlib import resources
from typing import Any

import pytest
import yaml

from gpuplan.errors import InputError
from gpuplan.scenario.shapes import (
    FIGURES,
    PRICING,
    PRICING_FIGURES,
    PricingTerms,
    Shape,
    get_shape,
    load_catalogue,
    load_pricing_terms,
    parse_catalogue,
    parse_pricing,
)

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
    pytest.param("BM.GPU.B300.8", 8, id="B300 bare metal has 8 GPUs"),
    pytest.param("BM.GPU.GB300.4", 4, id="GB300 bare metal has 4 GPUs"),
    pytest.param("BM.GPU.MI355X.8", 8, id="MI355X bare metal has 8 GPUs"),
    pytest.param("BM.GPU.RTXPRO.8", 8, id="RTX PRO 6000 bare metal has 8 GPUs"),
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
    pytest.param("BM.GPU.B300.8", True, id="B300 joins cluster networks"),
    pytest.param("BM.GPU.GB300.4", True, id="GB300 joins cluster networks"),
    pytest.param("BM.GPU.MI355X.8", True, id="MI355X joins cluster networks"),
    pytest.param("BM.GPU.RTXPRO.8", False, id="RTX PRO 6000 bare metal is not in the cluster-network list"),
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
    "price_per_node_hour_usd": "price_per_node_hour_usd",
}
SOURCE = re.compile(r"^\S.* <https?://\S+> \(as of \d{4}-\d{2}-\d{2}\)$")

# OCI pay-as-you-go list prices, USD per node-hour, as SkyPilot's OCI catalogue gives them (the same
# in every region of the file).
SKYPILOT_VMS_CSV = (
    "https://github.com/skypilot-org/skypilot-catalog/blob/0588751183820cf2dab5c8a89447e8aac9f73fd5/"
    "catalogs/v8/oci/vms.csv"
)
NODE_PRICES = [
    pytest.param("BM.GPU.H100.8", 80.0, id="H100 node 80 USD an hour"),
    pytest.param("BM.GPU.H200.8", 80.0, id="H200 node 80 USD an hour"),
    pytest.param("BM.GPU.B200.8", 112.0, id="B200 node 112 USD an hour"),
    pytest.param("BM.GPU.B300.8", 120.0, id="B300 node 120 USD an hour"),
    pytest.param("BM.GPU.GB200.4", 64.0, id="GB200 node 64 USD an hour"),
    pytest.param("BM.GPU.GB300.4", 72.0, id="GB300 node 72 USD an hour"),
    pytest.param("BM.GPU.A100-v2.8", 32.0, id="A100 80GB node 32 USD an hour"),
    pytest.param("BM.GPU4.8", 24.4, id="A100 40GB node 24.40 USD an hour"),
    pytest.param("BM.GPU.L40S.4", 14.0, id="L40S node 14 USD an hour"),
    pytest.param("BM.GPU.A10.4", 8.0, id="A10 bare metal 8 USD an hour"),
    pytest.param("VM.GPU.A10.2", 4.0, id="two-GPU A10 VM 4 USD an hour"),
    pytest.param("VM.GPU.A10.1", 2.0, id="one-GPU A10 VM 2 USD an hour"),
    pytest.param("BM.GPU.MI300X.8", 48.0, id="MI300X node 48 USD an hour"),
    pytest.param("BM.GPU.MI355X.8", 68.8, id="MI355X node 68.80 USD an hour"),
    pytest.param("BM.GPU.RTXPRO.8", 36.0, id="RTX PRO 6000 node 36 USD an hour"),
]

# The shapes added with the prices: GPUs, GPU memory (GB per GPU), CPU cores, node memory (GB),
# all from SkyPilot's file (a secondary source: Oracle's Compute Shapes page could not be read).
NEW_SHAPES = [
    pytest.param("BM.GPU.B300.8", 8, 262.5, 128, 4096.0, id="B300: 8 GPUs, 128 x86 cores, 4 TB"),
    pytest.param("BM.GPU.GB300.4", 4, 278.0, 144, 960.0, id="GB300: 4 GPUs, 144 Grace cores, 960 GB"),
    pytest.param("BM.GPU.MI355X.8", 8, 288.0, 128, 3072.0, id="MI355X: 8 GPUs, 128 x86 cores, 3 TB"),
    pytest.param("BM.GPU.RTXPRO.8", 8, 96.0, 144, 3072.0, id="RTX PRO 6000: 8 GPUs, 144 x86 cores, 3 TB"),
]


def raw_catalogue() -> Any:
    """The packaged catalogue as loaded YAML, private to the caller (safe to edit)."""
    text = resources.files("gpuplan.scenario").joinpath("data/oci_shapes.yaml").read_text(encoding="utf-8")
    return copy.deepcopy(yaml.safe_load(text))


def test_the_catalogue_holds_exactly_the_fifteen_shapes() -> None:
    assert sorted(load_catalogue()) == sorted(SHAPE_NAMES)
    assert len(SHAPE_NAMES) == 15


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


@pytest.mark.parametrize(("name", "usd"), NODE_PRICES)
def test_every_shape_has_its_list_price_per_node_hour_and_its_source(name: str, usd: float) -> None:
    shape = get_shape(name)
    assert shape.price_per_node_hour_usd == pytest.approx(usd)
    source = shape.sources["price_per_node_hour_usd"]
    assert f"<{SKYPILOT_VMS_CSV}>" in source
    assert "column Price (USD per node-hour" in source


@pytest.mark.parametrize(("name", "usd"), NODE_PRICES)
def test_the_price_per_gpu_hour_is_the_node_price_over_its_gpus(name: str, usd: float) -> None:
    shape = get_shape(name)
    assert shape.price_per_gpu_hour_usd == pytest.approx(usd / shape.gpus_per_node)


@pytest.mark.parametrize(
    ("name", "per_gpu"),
    [
        pytest.param("BM.GPU.H100.8", 10.0, id="an H100 GPU-hour is 10 USD"),
        pytest.param("BM.GPU.GB300.4", 18.0, id="a GB300 GPU-hour is 18 USD"),
        pytest.param("BM.GPU4.8", 3.05, id="an A100 40GB GPU-hour is 3.05 USD"),
        pytest.param("VM.GPU.A10.1", 2.0, id="an A10 GPU-hour is 2 USD"),
    ],
)
def test_per_gpu_prices(name: str, per_gpu: float) -> None:
    assert get_shape(name).price_per_gpu_hour_usd == pytest.approx(per_gpu)


def test_a_shape_without_a_price_has_no_price_per_gpu_hour() -> None:
    raw = raw_catalogue()
    raw["shapes"]["BM.GPU.H100.8"]["price_per_node_hour_usd"] = None
    shape = parse_catalogue(raw)["BM.GPU.H100.8"]
    assert shape.price_per_node_hour_usd is None
    assert shape.price_per_gpu_hour_usd is None


@pytest.mark.parametrize(("name", "gpus", "gpu_memory_gb", "cores", "memory_gb"), NEW_SHAPES)
def test_the_shapes_added_with_the_prices_load_with_their_sources(
    name: str, gpus: int, gpu_memory_gb: float, cores: int, memory_gb: float
) -> None:
    shape = get_shape(name)
    figures = (shape.gpus_per_node, shape.gpu_memory_gb, shape.cpu_cores, shape.memory_gb)
    assert figures == (gpus, gpu_memory_gb, cores, memory_gb)
    for path in ("gpus_per_node", "gpu_model", "gpu_memory_gb", "cpu_cores", "memory_gb"):
        assert shape.sources[path].startswith(
            "(secondary source) SkyPilot OCI catalogue skypilot-org/skypilot-catalog"
        ), path
        assert f"<{SKYPILOT_VMS_CSV}>" in shape.sources[path]
    assert "cluster_network_shape" in shape.sources["network.rdma_cluster_network"]


def test_grace_cores_are_vcpus_and_x86_cores_half_the_vcpus() -> None:
    assert "vCPUs / 2" in get_shape("BM.GPU.B300.8").sources["cpu_cores"]
    assert "Grace" in get_shape("BM.GPU.GB300.4").sources["cpu_cores"]


@pytest.mark.parametrize("name", SHAPE_NAMES, ids=lambda name: f"preemptible {name} as Oracle allows")
def test_bare_metal_shapes_may_not_be_preemptible_vms_may(name: str) -> None:
    shape = get_shape(name)
    assert shape.bare_metal is name.startswith("BM.")
    assert shape.preemptible_allowed is not shape.bare_metal


def test_the_pricing_terms_as_oracle_documents_them() -> None:
    terms = load_pricing_terms()
    assert terms is PRICING
    assert isinstance(terms, PricingTerms)
    assert terms.preemptible_share == 0.5
    assert terms.preemptible_bare_metal is False
    assert terms.unused_reserved_share == 0.85
    assert terms.committed_use_discount is None
    assert terms.secondary == frozenset({"capacity_reservation.unused_price_share"})
    assert terms.is_secondary("capacity_reservation.unused_price_share")
    assert not terms.is_secondary("preemptible.price_share")
    assert "does not support bare metal instances" in terms.sources["preemptible.bare_metal"]
    assert (
        "<https://docs.oracle.com/iaas/Content/Compute/Concepts/preemptible.htm>"
        in (terms.sources["preemptible.bare_metal"])
    )
    assert "50% off" in terms.sources["preemptible.price_share"]
    assert terms.sources["capacity_reservation.unused_price_share"].startswith("(secondary source) ")
    assert "negotiated" in terms.sources["committed_use.discount"]
    for path, source in terms.sources.items():
        assert path in PRICING_FIGURES
        assert SOURCE.match(source), f"{path}: {source!r}"


def test_the_packaged_pricing_terms_parse_as_loaded() -> None:
    assert parse_pricing(raw_catalogue()) == load_pricing_terms()


def test_preemptible_bare_metal_follows_the_pricing_terms() -> None:
    raw = raw_catalogue()
    raw["pricing"]["preemptible"]["bare_metal"] = True
    assert parse_catalogue(raw)["BM.GPU.H100.8"].preemptible_allowed is True


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
    del raw["shapes"]["BM.GPU.H100.8"]["sources"]["price_per_node_hour_usd"]
    return raw


def price_per_gpu_field(raw: Any) -> Any:
    shape = raw["shapes"]["BM.GPU.H100.8"]
    shape["price_per_gpu_hour_usd"] = shape.pop("price_per_node_hour_usd")
    return raw


def negative_price(raw: Any) -> Any:
    raw["shapes"]["BM.GPU.B300.8"]["price_per_node_hour_usd"] = -120
    return raw


def secondary_as_text(raw: Any) -> Any:
    raw["shapes"]["BM.GPU.RTXPRO.8"]["sources"]["memory_gb"] = {
        "url": "https://example.org",
        "title": "t",
        "as_of": "2026-12-06",
        "secondary": "yes",
    }
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
            price_without_source, "BM.GPU.H100.8", "price_per_node_hour_usd", id="a price without a source"
        ),
        pytest.param(
            price_per_gpu_field, "BM.GPU.H100.8", "price_per_node_hour_usd", id="a per-GPU price field"
        ),
        pytest.param(negative_price, "BM.GPU.B300.8", "price_per_node_hour_usd", id="a negative price"),
        pytest.param(
            secondary_as_text, "BM.GPU.RTXPRO.8", "sources.memory_gb", id="a secondary flag as text"
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


def pricing_share_without_source(raw: Any) -> Any:
    del raw["pricing"]["sources"]["capacity_reservation.unused_price_share"]
    return raw


def pricing_share_above_one(raw: Any) -> Any:
    raw["pricing"]["preemptible"]["price_share"] = 50
    return raw


def pricing_term_left_out(raw: Any) -> Any:
    del raw["pricing"]["committed_use"]["discount"]
    return raw


def pricing_bare_metal_as_text(raw: Any) -> Any:
    raw["pricing"]["preemptible"]["bare_metal"] = "no"
    return raw


def pricing_source_of_no_term(raw: Any) -> Any:
    raw["pricing"]["sources"]["spot.price_share"] = raw["pricing"]["sources"]["preemptible.price_share"]
    return raw


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        pytest.param(
            pricing_share_without_source,
            "capacity_reservation.unused_price_share",
            id="a pricing figure without a source",
        ),
        pytest.param(pricing_share_above_one, "preemptible.price_share", id="a share in percent, not 0 to 1"),
        pytest.param(pricing_term_left_out, "committed_use.discount", id="a pricing term left out, not null"),
        pytest.param(pricing_bare_metal_as_text, "preemptible.bare_metal", id="the bare metal flag as text"),
        pytest.param(pricing_source_of_no_term, "sources.spot.price_share", id="a source of no pricing term"),
    ],
)
def test_a_bad_pricing_edit_fails_loudly_naming_the_field(edit: Any, path: str) -> None:
    with pytest.raises(ValueError, match=rf"pricing: {re.escape(path)}: "):
        parse_pricing(edit(raw_catalogue()))
    with pytest.raises(ValueError, match=rf"pricing: {re.escape(path)}: "):
        parse_catalogue(edit(raw_catalogue()))
