"""The OCI GPU shape catalogue: what one node of each Oracle Cloud GPU shape holds.

The figures (GPUs per node, GPU model and memory, CPU cores, node memory, RDMA cluster-network
capability, list price per node-hour) are data, not code: they live in
``gpuplan/scenario/data/oci_shapes.yaml`` with a source and a date for every figure, and a
``null`` wherever no public source we could read states one. The file's header says where the
figures come from and in which units.

Prices are OCI public list prices (pay-as-you-go, on demand) per node-hour at the dates their
sources state, or ``None`` where no price list figure could be read; ``Shape.price_per_gpu_hour_usd``
is derived from them. A scenario may override the price of any pool, and should whenever it knows
its negotiated or committed rate.

How Oracle bills capacity other than on demand is data too (the file's ``pricing`` section), read
into ``PRICING``, a ``PricingTerms``: the share of the on-demand price a preemptible node-hour costs
(0.5), whether bare metal may be preemptible (no: ``Shape.preemptible_allowed`` is False for every
``BM.*`` shape), the share an unused reserved node-hour costs (0.85, from a secondary source:
``PRICING.is_secondary("capacity_reservation.unused_price_share")``) and the published committed-use
discount (``None``: Oracle's contract discounts are negotiated)::

    get_shape("BM.GPU.H100.8").price_per_node_hour_usd   # 80.0
    get_shape("BM.GPU.H100.8").price_per_gpu_hour_usd    # 10.0
    PRICING.preemptible_share * 80.0                     # 40.0, on a VM shape only

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
    "price_per_node_hour_usd",
)
_SHAPE_KEYS = {figure.split(".")[0] for figure in FIGURES} | {"sources"}
_NETWORK_KEYS = {figure.split(".", 1)[1] for figure in FIGURES if figure.startswith("network.")}
_SOURCE_KEYS = {"url", "title", "as_of", "note", "secondary"}
_TOP_KEYS = {"references", "pricing", "shapes"}

# Field paths of the pricing terms (the file's `pricing` section, and keys of its `sources`).
PRICING_FIGURES = (
    "preemptible.bare_metal",
    "preemptible.price_share",
    "capacity_reservation.unused_price_share",
    "committed_use.discount",
)
_PRICING_GROUPS: dict[str, set[str]] = {
    group: {figure.split(".")[1] for figure in PRICING_FIGURES if figure.startswith(f"{group}.")}
    for group in dict.fromkeys(figure.split(".")[0] for figure in PRICING_FIGURES)
}

# Builds the error for a problem at a field path of the shape being parsed.
_Fail = Callable[[str, str], ValueError]


@dataclass(frozen=True)
class Shape:
    """One OCI GPU shape. Units: GB, TB, Gbps, USD per node-hour; ``None`` where no source states it.

    ``cpu_cores`` counts physical cores (on x86 shapes, the OCPU count). ``sources`` maps each
    figure's field path in the catalogue (``"cpu_cores"``, ``"network.rdma_cluster_network"``,
    ``"price_per_node_hour_usd"``, ...) to ``"title <url> (as of YYYY-MM-DD)"``, the title starting
    with ``"(secondary source) "`` when the figure comes only from a third party's copy of Oracle's
    data. ``preemptible_allowed`` is derived: Oracle offers preemptible capacity on VMs, not on
    bare metal (``BM.*``), see ``PricingTerms``.
    """

    name: str
    gpus_per_node: int
    gpu_model: str
    gpu_memory_gb: float | None
    cpu_cores: int | None
    memory_gb: float | None
    rdma_cluster_network: bool
    price_per_node_hour_usd: float | None
    sources: dict[str, str] = field(hash=False, repr=False)
    local_nvme_tb: float | None = None
    frontend_network_gbps: float | None = None
    rdma_network_gbps: float | None = None
    preemptible_allowed: bool = False

    @property
    def bare_metal(self) -> bool:
        """A bare metal shape (``BM.*``), as opposed to a virtual machine (``VM.*``)."""
        return self.name.startswith("BM.")

    @property
    def price_per_gpu_hour_usd(self) -> float | None:
        """The list price per GPU-hour: the node-hour price over the node's GPUs (``None`` if unknown)."""
        if self.price_per_node_hour_usd is None:
            return None
        return self.price_per_node_hour_usd / self.gpus_per_node


@dataclass(frozen=True)
class PricingTerms:
    """How Oracle bills capacity other than on demand; every share is of the on-demand price.

    ``preemptible_share``: what a preemptible node-hour costs (0.5); ``preemptible_bare_metal``:
    whether bare metal shapes may be preemptible (False); ``unused_reserved_share``: what a reserved
    node-hour costs while no instance uses it (0.85); ``committed_use_discount``: a published
    committed-use discount (``None``: negotiated per contract, none published). ``None`` wherever no
    source states a figure. ``sources`` maps each field path of the catalogue's ``pricing`` section
    (``PRICING_FIGURES``) to its source, as ``Shape.sources`` does; ``secondary`` holds the paths
    whose only source is a third party's copy of Oracle's data.
    """

    preemptible_bare_metal: bool
    preemptible_share: float | None
    unused_reserved_share: float | None
    committed_use_discount: float | None
    sources: dict[str, str] = field(hash=False, repr=False)
    secondary: frozenset[str] = frozenset()

    def is_secondary(self, path: str) -> bool:
        """Whether the figure at ``path`` (e.g. ``"capacity_reservation.unused_price_share"``)
        comes only from a secondary source."""
        return path in self.secondary


@functools.cache
def _packaged_document() -> Any:
    text = resources.files(CATALOGUE_PACKAGE).joinpath(CATALOGUE_PATH).read_text(encoding="utf-8")
    return yaml.safe_load(text)


@functools.cache
def load_catalogue() -> dict[str, Shape]:
    """Every shape in the packaged catalogue, by name (read and checked once; do not mutate)."""
    return parse_catalogue(_packaged_document())


@functools.cache
def load_pricing_terms() -> PricingTerms:
    """The packaged catalogue's pricing terms (read and checked once); also ``PRICING``."""
    return parse_pricing(_packaged_document())


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
    _check_document(raw)
    terms = parse_pricing(raw)
    shapes = raw.get("shapes")
    if not isinstance(shapes, Mapping) or not shapes:
        raise ValueError(f"{CATALOGUE_PATH}: 'shapes' must be a non-empty mapping of shape name to figures")
    return {str(name): _parse_shape(str(name), entry, terms) for name, entry in shapes.items()}


def parse_pricing(raw: Any) -> PricingTerms:
    """Check a loaded catalogue document's ``pricing`` section and build its terms (``ValueError``
    naming the field on the first problem)."""
    _check_document(raw)

    def fail(path: str, problem: str) -> ValueError:
        return ValueError(f"{CATALOGUE_PATH}: pricing: {path}: {problem}")

    pricing = raw.get("pricing")
    if not isinstance(pricing, Mapping):
        raise fail("(section)", "expected a mapping of pricing terms with their sources")
    _check_keys(pricing, set(_PRICING_GROUPS) | {"sources"}, "", fail)
    values: dict[str, Any] = {}
    for group, keys in _PRICING_GROUPS.items():
        terms = pricing[group]
        if not isinstance(terms, Mapping):
            raise fail(group, "expected a mapping")
        _check_keys(terms, keys, f"{group}.", fail)
        values.update({f"{group}.{key}": terms[key] for key in keys})

    bare_metal = values["preemptible.bare_metal"]
    if not isinstance(bare_metal, bool):
        raise fail("preemptible.bare_metal", f"expected true or false, got {bare_metal!r}")
    shares = ("preemptible.price_share", "capacity_reservation.unused_price_share", "committed_use.discount")
    for path in shares:
        _check_share(values[path], path, fail)

    sources, secondary = _parse_sources(pricing["sources"], fail, PRICING_FIGURES)
    for path in PRICING_FIGURES:
        if values[path] is not None and path not in sources:
            raise fail(path, "has a figure but no source (add one to 'sources', or write null)")

    def share(path: str) -> float | None:
        value = values[path]
        return None if value is None else float(value)

    return PricingTerms(
        preemptible_bare_metal=bare_metal,
        preemptible_share=share("preemptible.price_share"),
        unused_reserved_share=share("capacity_reservation.unused_price_share"),
        committed_use_discount=share("committed_use.discount"),
        sources=sources,
        secondary=secondary,
    )


def _check_document(raw: Any) -> None:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{CATALOGUE_PATH}: expected a mapping with 'pricing' and 'shapes' keys")
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise ValueError(f"{CATALOGUE_PATH}: unknown top-level keys {sorted(unknown, key=str)}")


def _parse_shape(name: str, entry: Any, terms: PricingTerms) -> Shape:
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
    _check_number(values["price_per_node_hour_usd"], "price_per_node_hour_usd", fail, allow_zero=True)

    sources, _ = _parse_sources(entry["sources"], fail, FIGURES)
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
        price_per_node_hour_usd=number("price_per_node_hour_usd"),
        sources=sources,
        local_nvme_tb=number("local_nvme_tb"),
        frontend_network_gbps=number("network.frontend_gbps"),
        rdma_network_gbps=number("network.rdma_gbps"),
        preemptible_allowed=not name.startswith("BM.") or terms.preemptible_bare_metal,
    )


def _parse_sources(raw: Any, fail: _Fail, figures: tuple[str, ...]) -> tuple[dict[str, str], frozenset[str]]:
    """Each figure's source as ``"title <url> (as of date)"``, and the figures whose source is secondary."""
    if not isinstance(raw, Mapping):
        raise fail("sources", "expected a mapping of field path to {url, title, as_of}")
    sources: dict[str, str] = {}
    secondary: set[str] = set()
    for path, record in raw.items():
        where = f"sources.{path}"
        if path not in figures:
            raise fail(where, f"not a figure here (figures: {', '.join(figures)})")
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
        is_secondary = record.get("secondary", False)
        if not isinstance(is_secondary, bool):
            raise fail(where, f"secondary must be true or false, got {is_secondary!r}")
        prefix = "(secondary source) " if is_secondary else ""
        sources[str(path)] = f"{prefix}{title.strip()} <{url}> (as of {_iso_date(as_of, where, fail)})"
        if is_secondary:
            secondary.add(str(path))
    return sources, frozenset(secondary)


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


def _check_share(value: Any, path: str, fail: _Fail) -> None:
    if value is None:
        return
    number = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    if not number or not 0 <= value <= 1:
        raise fail(path, f"expected a share of the on-demand price from 0 to 1, or null, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# The packaged catalogue's pricing terms, read when this module is imported (a bad edit of the
# catalogue fails at once, naming the field).
PRICING: PricingTerms = load_pricing_terms()
