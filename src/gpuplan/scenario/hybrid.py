"""``models.hybrid``: which work runs on Slurm and which on Kubernetes, and how pools are split."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt, model_validator
from pydantic_core import PydanticCustomError

from gpuplan.scenario.section import Section
from gpuplan.scenario.units import MAX_SIZE_NODES, Duration

Side = Literal["slurm", "kubernetes"]


# the routing defaults: these kinds of work go to Kubernetes, every other job to Slurm
KUBERNETES_KINDS = ("service", "pipeline")


class RoutingRule(Section):
    """Work matching every given field goes to ``to``; the first matching rule wins."""

    kind: Literal["batch", "interactive", "pipeline", "service"] | None = None
    team: str | None = None
    workload: str | None = None
    multi_node: bool | None = Field(None, description="jobs of more than one node (MPI over RDMA)")
    to: Side

    def matches(self, kind: str, team: str, workload: str, multi_node: bool) -> bool:
        return (
            self.kind in (None, kind)
            and self.team in (None, team)
            and self.workload in (None, workload)
            and self.multi_node in (None, multi_node)
        )

    @model_validator(mode="after")
    def _matches_something(self) -> RoutingRule:
        if self.kind is None and self.team is None and self.workload is None and self.multi_node is None:
            raise PydanticCustomError("rule", "a routing rule needs kind, team, workload or multi_node", {})
        return self


class Lending(Section):
    """Nodes moving between the sides, as Slurm-on-Kubernetes operators (SchedMD Slinky, Nebius
    Soperator, CoreWeave SUNK) move them. ``none``: a static split. ``kubernetes_borrows``: when
    services' pods cannot be placed, Kubernetes' cluster autoscaler takes Slurm nodes (idle ones
    first) and gives them back once unneeded; a node leaving Slurm drains (jobs still on it after
    ``grace_time`` are requeued, so no GPU serves both sides), is reconfigured and joins Kubernetes
    (``move_time``), and the same move time applies on its way back."""

    policy: Literal["none", "kubernetes_borrows"] = "none"
    max_nodes: StrictInt | None = Field(
        None, ge=0, le=MAX_SIZE_NODES, description="nodes of each pool Slurm may lend (default: all)"
    )
    grace_time: Duration = Field(300.0, description="before a draining node's jobs are requeued")
    move_time: Duration = Field(300.0, description="reconfigure a node and join the other side")


class HybridSettings(Section):
    split: dict[str, Annotated[StrictInt, Field(ge=0, le=MAX_SIZE_NODES)]] = Field(
        default_factory=dict,
        description="nodes of each pool given to Slurm, the rest to Kubernetes (default: proposed from the "
        "workload's peak service GPUs and batch GPU-hours)",
    )
    routing: list[RoutingRule] = Field(
        default_factory=list,
        description="rules before the defaults (services and pipelines to Kubernetes, other jobs to Slurm)",
    )
    lending: Lending = Lending()

    def side_of(self, kind: str, team: str, workload: str, multi_node: bool) -> tuple[Side, bool]:
        """Where work goes, and whether a rule sent it (else the defaults: services and pipelines to
        Kubernetes, other jobs to Slurm)."""
        for rule in self.routing:
            if rule.matches(kind, team, workload, multi_node):
                return rule.to, True
        return ("kubernetes" if kind in KUBERNETES_KINDS else "slurm"), False
