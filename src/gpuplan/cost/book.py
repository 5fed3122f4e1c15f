"""A price book: what one node-hour of each of a scenario's pools costs, and where the figure comes
from.

The simulator knows no price. Each pool of a run names the scenario pool its nodes are
(``sim.cluster.Pool.origin``: a hybrid side's part, an OKE node pool), and the book prices that
pool by its shape: the catalogue's list price per node-hour (``scenario/data/oci_shapes.yaml``,
with its source and date), unless the scenario gives the pool its own ``price_per_gpu_hour`` (then
the source says so: never "list price" for a typed figure), or the price of a copy of Oracle's
list the scenario names (``cluster.price_list``, written by ``gpuplan prices --refresh``). The
pool's ``pricing`` says how Oracle bills it (``on_demand``, ``preemptible``, ``reserved``) and any
committed-use discount.

Example::

    book = price_book(load_scenario("org.yaml"))
    book.of("h100").usd_per_node_hour_paid   # 80.0 for BM.GPU.H100.8 on demand
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuplan.scenario.load import LoadedScenario

ON_DEMAND, PREEMPTIBLE, RESERVED = "on_demand", "preemptible", "reserved"


@dataclass(frozen=True)
class PoolPrice:
    """One scenario pool's price: per node-hour before options (``usd_per_node_hour``, None when
    unknown), where it comes from, and how it is billed."""

    pool: str
    nodes: int
    gpus_per_node: int
    usd_per_node_hour: float | None
    source: str
    option: str = ON_DEMAND
    committed_discount: float = 0.0  # share off the price, 0..1
    option_share: float = 1.0  # the share of the on-demand price the option pays (preemptible)
    reserved_nodes: int = 0  # held by a capacity reservation (option reserved)
    unused_reserved_share: float | None = None  # of the price, for a reserved node not up

    @property
    def usd_per_node_hour_paid(self) -> float | None:
        """What a node-hour up costs under the option and the discount."""
        if self.usd_per_node_hour is None:
            return None
        return self.usd_per_node_hour * (1.0 - self.committed_discount) * self.option_share


@dataclass(frozen=True)
class PriceBook:
    pools: dict[str, PoolPrice] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the prices are, for the report

    def of(self, origin: str) -> PoolPrice | None:
        return self.pools.get(origin)


def price_book(loaded: LoadedScenario) -> PriceBook:
    """The scenario's pools priced: the catalogue's list price by shape, or the pool's own."""
    from gpuplan.scenario.shapes import PRICING, get_shape

    refreshed: dict[str, float] = {}
    listed = ""
    if loaded.scenario.cluster.price_list is not None:
        from gpuplan.cost.refresh import read_local_copy

        records, header = read_local_copy(loaded.resolve(loaded.scenario.cluster.price_list))
        refreshed = {shape: record.usd_per_node_hour for shape, record in records.items()}
        listed = f"Oracle's price list as refreshed on {header.get('date')} <{header.get('url')}>"
    pools: dict[str, PoolPrice] = {}
    for spec in loaded.scenario.cluster.pools:
        resolved = loaded.pool(spec.name)
        shape = get_shape(spec.shape) if spec.shape is not None else None
        if spec.price_per_gpu_hour is not None:
            usd = spec.price_per_gpu_hour * resolved.gpus_per_node
            source = f"scenario (pool {spec.name}: price_per_gpu_hour {spec.price_per_gpu_hour:g} USD)"
        elif shape is not None and shape.name in refreshed:
            usd = refreshed[shape.name]
            source = f"refreshed list price of {shape.name}: {listed}"
        elif shape is not None and shape.price_per_node_hour_usd is not None:
            usd = shape.price_per_node_hour_usd
            source = f"catalogue list price of {shape.name}: {shape.sources['price_per_node_hour_usd']}"
        else:
            usd, source = None, "none (a custom pool without price_per_gpu_hour)"
        pricing = spec.pricing
        option_share = PRICING.preemptible_share if pricing.option == PREEMPTIBLE else 1.0
        pools[spec.name] = PoolPrice(
            pool=spec.name,
            nodes=resolved.nodes,
            gpus_per_node=resolved.gpus_per_node,
            usd_per_node_hour=usd,
            source=source,
            option=pricing.option,
            committed_discount=pricing.committed_discount_percent / 100.0,
            option_share=option_share if option_share is not None else 1.0,
            reserved_nodes=(resolved.nodes if pricing.reserved_nodes is None else pricing.reserved_nodes)
            if pricing.option == RESERVED
            else 0,
            unused_reserved_share=PRICING.unused_reserved_share if pricing.option == RESERVED else None,
        )
    return PriceBook(pools)
