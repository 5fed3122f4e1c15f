"""The OCI GPU shape catalogue: what one node of each Oracle Cloud GPU shape holds.

The figures (GPUs per node, GPU model and memory, CPU cores, node memory, RDMA cluster-network
capability, list price per GPU-hour) are data, not code: they live in
``gpuplan/scenario/data/oci_shapes.yaml`` with a source and a date for every figure, and a
``null`` wherever no public source we could read states one. The file's header says where the
figures come from and in which units.

Prices are OCI public list prices (pay-as-you-go) at the dates their sources state, or ``None``
where no price list figure could be read. A scenario may override the price of any pool, and
should whenever it knows its negotiated or committed rate.

The file is checked when it is loaded: every shape needs at least one GPU, every figure that is
not null needs a source with a url, a title and a date, and a bad edit raises ``ValueError``
naming the shape and the field.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from gpuplan.errors import InputError

CATALOGUE_PACKAGE = "gpuplan.scenario"
CATALOGUE_PATH = "data/oci_shapes.yaml"

# Field paths of a shape's figures, as written in the catalogue (and as keys of `sources`).
FIGURES = (
    "gpus_per_node",
    "gpu_model",
    "gpu_memory_gb",
    "cpu_cores",
    "memory_gb",
    "local_nvme_tb",
    "network.rdma_cluster_network",
    "network.frontend_gbps",
    "network.rdma_gbps",
    "price_per_gpu_hour_usd",
)
_SHAPE_KEYS = {figure.split(".")[0] for figure in FIGURES} | {"sources"}
_NETWORK_KEYS = {figure.split(".", 1)[1] for figure in FIGURES if figure.startswith("network.")}
_SOURCE_KEYS = {"url", "title", "as_of", "note"}
_TOP_KEYS = {"references", "shapes"}

# Builds the error for a problem at a field path of the shape being parsed.
_Fail = Callable[[str, str], ValueError]


@dataclass(frozen=True)
class Shape:
    """One OCI GPU shape. Units: GB, TB, Gbps, USD per GPU-hour; ``None`` where no source states it.

    ``cpu_cores`` counts physical cores (on x86 shapes, the OCPU count). ``sources`` maps each
    figure's field path in the catalogue (``"cpu_cores"``, ``"network.rdma_cluster_network"``,
    ...) to ``"title <url> (as of YYYY-MM-DD)"``.
    """

    name: str
    gpus_per_node: int
    gpu_model: str
    gpu_memory_gb: float | None
    cpu_cores: int | None
    memory_gb: float | None
    rdma_cluster_network: bool
    price_per_gpu_hour_usd: float | None
    sources: dict[str, str] = field(hash=False, repr=False)
    local_nvme_tb: float | None = None
    frontend_network_gbps: float | None = None
    rdma_network_gbps: float | None = None


@functools.cache
def load_catalogue() -> dict[str, Shape]:
    """Every shape in the packaged catalogue, by name (read and checked once; do not mutate)."""
    text = resources.files(CATALOGUE_PACKAGE).joinpath(CATALOGUE_PATH).read_text(encoding="utf-8")
    return parse_catalogue(yaml.safe_load(text))


def get_shape(name: str) -> Shape:
    """The shape called ``name``; ``InputError`` (field ``shape``) with a suggestion if there is none."""
    catalogue = load_catalogue()
    if name in catalogue:
        return catalogue[name]
    known = sorted(catalogue)
    by_folded = {known_name.casefold(): known_name for known_name in known}
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=1)
    hint = f"; did you mean {by_folded[close[0]]!r}?" if close else "."
    raise InputError(f"unknown OCI shape {name!r}{hint} Known shapes: {', '.join(known)}", field="shape")


def parse_catalogue(raw: Any) -> dict[str, Shape]:
    """Check a loaded catalogue document and build its shapes; ``ValueError`` on the first problem."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{CATALOGUE_PATH}: expected a mapping with a 'shapes' key")
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise ValueError(f"{CATALOGUE_PATH}: unknown top-level keys {sorted(unknown, key=str)}")
    shapes = raw.get("shapes")
    if not isinstance(shapes, Mapping) or not shapes:
        raise ValueError(f"{CATALOGUE_PATH}: 'shapes' must be a non-empty mapping of shape name to figures")
    return {str(name): _parse_shape(str(name), entry) for name, entry in shapes.items()}


def _parse_shape(name: str, entry: Any) -> Shape:
    def fail(path: str, problem: str) -> ValueError:
        return ValueError(f"{CATALOGUE_PATH}: shape {name}: {path}: {problem}")

    if not isinstance(entry, Mapping):
        raise fail("(shape)", "expected a mapping of figures")
    _check_keys(entry, _SHAPE_KEYS, "", fail)
    network = entry["network"]
    if not isinstance(network, Mapping):
        raise fail("network", "expected a mapping")
    _check_keys(network, _NETWORK_KEYS, "network.", fail)

    values: dict[str, Any] = {path: entry[path] for path in FIGURES if not path.startswith("network.")}
    values.update({f"network.{key}": network[key] for key in _NETWORK_KEYS})

    gpus = values["gpus_per_node"]
    if not _is_int(gpus) or gpus < 1:
        raise fail("gpus_per_node", f"expected a whole number of GPUs >= 1, got {gpus!r}")
    model = values["gpu_model"]
    if not isinstance(model, str) or not model.strip():
        raise fail("gpu_model", f"expected the GPU model as text, got {model!r}")
    cores = values["cpu_cores"]
    if cores is not None and (not _is_int(cores) or cores < 1):
        raise fail("cpu_cores", f"expected a whole number of cores >= 1 or null, got {cores!r}")
    rdma = values["network.rdma_cluster_network"]
    if not isinstance(rdma, bool):
        raise fail("network.rdma_cluster_network", f"expected true or false, got {rdma!r}")
    for path in ("gpu_memory_gb", "memory_gb", "local_nvme_tb", "network.frontend_gbps", "network.rdma_gbps"):
        _check_number(values[path], path, fail, allow_zero=False)
    _check_number(values["price_per_gpu_hour_usd"], "price_per_gpu_hour_usd", fail, allow_zero=True)

    sources = _parse_sources(entry["sources"], fail)
    for path in FIGURES:
        if values[path] is not None and path not in sources:
            raise fail(path, "has a figure but no source (add one to 'sources', or write null)")

    def number(path: str) -> float | None:
        value = values[path]
        return None if value is None else float(value)

    return Shape(
        name=name,
        gpus_per_node=gpus,
        gpu_model=model,
        gpu_memory_gb=number("gpu_memory_gb"),
        cpu_cores=cores,
        memory_gb=number("memory_gb"),
        rdma_cluster_network=rdma,
        price_per_gpu_hour_usd=number("price_per_gpu_hour_usd"),
        sources=sources,
        local_nvme_tb=number("local_nvme_tb"),
        frontend_network_gbps=number("network.frontend_gbps"),
        rdma_network_gbps=number("network.rdma_gbps"),
    )


def _parse_sources(raw: Any, fail: _Fail) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise fail("sources", "expected a mapping of field path to {url, title, as_of}")
    sources: dict[str, str] = {}
    for path, record in raw.items():
        where = f"sources.{path}"
        if path not in FIGURES:
            raise fail(where, f"not a figure of a shape (figures: {', '.join(FIGURES)})")
        if not isinstance(record, Mapping):
            raise fail(where, "expected a mapping with url, title and as_of")
        unknown = set(record) - _SOURCE_KEYS
        if unknown:
            raise fail(where, f"unknown keys {sorted(unknown)}")
        url, title, as_of = record.get("url"), record.get("title"), record.get("as_of")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise fail(where, f"url must be an http(s) address, got {url!r}")
        if not isinstance(title, str) or not title.strip():
            raise fail(where, f"title must be text, got {title!r}")
        sources[str(path)] = f"{title.strip()} <{url}> (as of {_iso_date(as_of, where, fail)})"
    return sources


def _iso_date(value: Any, where: str, fail: _Fail) -> str:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise fail(where, f"as_of must be a date like 2026-01-31, got {value!r}")


def _check_keys(entry: Mapping[Any, Any], expected: set[str], prefix: str, fail: _Fail) -> None:
    missing = expected - set(entry)
    if missing:
        first = sorted(missing)[0]
        raise fail(prefix + first, "missing (write null if no source states it)")
    unknown = set(entry) - expected
    if unknown:
        raise fail(prefix + str(sorted(unknown, key=str)[0]), "unknown field")


def _check_number(value: Any, path: str, fail: _Fail, *, allow_zero: bool) -> None:
    if value is None:
        return
    number = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    if not number or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise fail(path, f"expected a number {bound} or null, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
