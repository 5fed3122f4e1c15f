"""Fair-share factors for Slurm's multifactor priority (``PriorityWeightFairshare``).

Classic fair share (https://slurm.schedmd.com/priority_multifactor.html, "Fair-share Factor"; Slurm
uses it with ``PriorityFlags=NO_FAIR_TREE``), for a flat association tree of accounts under the root:

    F = 2 ** (-U / S)

where S is the account's normalised shares (``Fairshare=`` over the sum of all accounts') and U its
normalised usage (decayed GPU-seconds over the sum of all accounts'). Usage decays with
``PriorityDecayHalfLife``: past usage counts half as much after each half-life. An account using
exactly its share gets 0.5; no usage, 1. Fair Tree (the default since Slurm 19.05) is still to come.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


class ClassicFairShare:
    """The hook the engine calls every ``PriorityCalcPeriod`` with each account's GPU-seconds since
    the previous call; returns each account's fair-share factor."""

    def __init__(self, shares: npt.NDArray[np.float64], decay_half_life_s: float) -> None:
        if (shares <= 0).any():
            raise ValueError("fair-share shares must be > 0")
        self.normalised_shares = shares / shares.sum()
        self.decay_half_life_s = decay_half_life_s
        self.usage = np.zeros(len(shares))
        self.last_s: float | None = None

    def __call__(self, now: float, accrued: bytes) -> bytes:
        if self.last_s is not None and self.decay_half_life_s > 0:
            self.usage *= 2.0 ** (-(now - self.last_s) / self.decay_half_life_s)
        self.last_s = now
        self.usage += np.frombuffer(accrued, dtype=np.float64)
        total = self.usage.sum()
        normalised_usage = self.usage / total if total > 0 else np.zeros_like(self.usage)
        return bytes(np.exp2(-normalised_usage / self.normalised_shares).astype(np.float64).data)
