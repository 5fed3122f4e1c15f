"""The advisor: decision criteria as data (criteria.yaml), the evidence they read, and auditable scoring.

``advise(summary, loaded_input)`` returns a ``Recommendation`` (what ``recommendation.json`` holds,
written by ``write_recommendation``); ``recommend(gather(...))`` is the same from evidence built by hand.
"""

from __future__ import annotations

from gpuplan.advisor.advise import advise, write_recommendation
from gpuplan.advisor.criteria import Criteria, load_criteria
from gpuplan.advisor.evidence import Evidence, gather, workload_figures
from gpuplan.advisor.recommendation import Recommendation
from gpuplan.advisor.scoring import recommend

__all__ = [
    "Criteria",
    "Evidence",
    "Recommendation",
    "advise",
    "gather",
    "load_criteria",
    "recommend",
    "workload_figures",
    "write_recommendation",
]
