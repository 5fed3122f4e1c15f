"""Slurm advance reservations (https://slurm.schedmd.com/reservations.html):
``scontrol create reservation ReservationName=R StartTime=T Duration=D NodeCnt=N Accounts=A``.

A reservation holds ``NodeCnt`` nodes of a pool (here its highest-numbered ones) from its start for
its duration, for the jobs of its ``Accounts``, or for no job at all (``Flags=MAINT``: maintenance,
when no account is given). ``Flags=DAILY``/``WEEKLY`` repeat it (``repeat_s``). Every scheduler
pass, the main scheduler's and backfill's, places a job only on nodes whose reservations it may
use over its whole run (start to start + time limit), so a job never crosses into a maintenance
window; jobs of the accounts may use the reserved nodes (as if they asked ``--reservation=R``)
besides the others. Reservations on one node must not overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gpuplan.errors import InputError
from gpuplan.workload.jobtable import Float64, Int32, Int64, Labels

MAX_ACCOUNTS = 64  # accounts that reservations can name, as bits of a mask


@dataclass(frozen=True)
class Reservation:
    name: str
    pool: str
    nodes: int  # NodeCnt
    start_s: float  # StartTime, from t = 0
    duration_s: float  # Duration
    accounts: tuple[str, ...] = ()  # Accounts (empty: maintenance, Flags=MAINT)
    repeat_s: float | None = None  # Flags=DAILY (86400) / WEEKLY (604800)


@dataclass(frozen=True)
class ReservationInputs:
    """Windows of one pool for the engine (see ``sim/slurm/_core/reservations.h``)."""

    start: Float64
    end: Float64
    accounts: npt.NDArray[np.uint64]
    job_account: Int32
    node_offsets: Int64
    node_windows: Int32
    bounds: Float64

    def take(self, rows: npt.NDArray[np.int64]) -> ReservationInputs:
        return replace(self, job_account=self.job_account[rows])

    def for_engine(self) -> dict[str, object]:
        """The settings ``_core/reservations.c`` reads, by name."""
        return {
            "plugin": "reservations",
            "start": np.ascontiguousarray(self.start, dtype=np.float64),
            "end": np.ascontiguousarray(self.end, dtype=np.float64),
            "accounts": np.ascontiguousarray(self.accounts, dtype=np.uint64),
            "job_account": np.ascontiguousarray(self.job_account, dtype=np.int32),
            "node_offsets": np.ascontiguousarray(self.node_offsets, dtype=np.int64),
            "node_windows": np.ascontiguousarray(self.node_windows, dtype=np.int32),
            "bounds": np.ascontiguousarray(self.bounds, dtype=np.float64),
        }


def reservation_inputs(
    reservations: list[Reservation], pool_nodes: int, teams: Labels, horizon_s: float
) -> ReservationInputs | None:
    """Engine inputs for the ``reservations`` of one pool of ``pool_nodes`` nodes, repeated up to
    ``horizon_s``; ``teams`` are the jobs' accounts. None when there are none."""
    if not reservations:
        return None
    account_index = {team: i for i, team in enumerate(teams.labels)}
    windows: list[tuple[float, float, int, int, str]] = []  # start, end, mask, nodes, name
    for reservation in reservations:
        mask = 0
        for account in reservation.accounts:
            index = account_index.get(account)
            if index is None:
                continue  # no job of that account: the nodes are held for nobody
            if index >= MAX_ACCOUNTS:
                raise InputError(
                    f"reservation {reservation.name!r}: at most {MAX_ACCOUNTS} accounts can be named",
                    field="models.slurm.reservations",
                )
            mask |= 1 << index
        nodes = min(reservation.nodes, pool_nodes)
        start = reservation.start_s
        while True:
            windows.append((start, start + reservation.duration_s, mask, nodes, reservation.name))
            if reservation.repeat_s is None or start + reservation.repeat_s >= horizon_s:
                break
            start += reservation.repeat_s
    windows.sort()
    per_node: list[list[int]] = [[] for _ in range(pool_nodes)]
    for w, (start, _end, _, nodes, name) in enumerate(windows):
        for node in range(pool_nodes - nodes, pool_nodes):
            if per_node[node] and windows[per_node[node][-1]][1] > start:
                raise InputError(
                    f"reservations {windows[per_node[node][-1]][4]!r} and {name!r} overlap on the same nodes",
                    field="models.slurm.reservations",
                )
            per_node[node].append(w)
    job_account = np.full(len(teams), -1, dtype=np.int32)
    codes = teams.codes
    job_account[codes < MAX_ACCOUNTS] = codes[codes < MAX_ACCOUNTS]
    return ReservationInputs(
        start=np.array([w[0] for w in windows]),
        end=np.array([w[1] for w in windows]),
        accounts=np.array([w[2] for w in windows], dtype=np.uint64),
        job_account=job_account,
        node_offsets=np.concatenate([[0], np.cumsum([len(ws) for ws in per_node])]).astype(np.int64),
        node_windows=np.array([w for ws in per_node for w in ws], dtype=np.int32),
        bounds=np.unique([t for w in windows for t in w[:2]]).astype(np.float64),
    )
