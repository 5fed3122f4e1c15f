"""The columnar job table: dictionary-encoded text, selection, concatenation, Arrow output."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpuplan.workload.jobtable import JobTable, Labels, unique_columns


def test_labels_from_keys_share_a_label_between_keys() -> None:
    labels = Labels.from_keys(np.array([3, 2, 4, 2]), lambda key: "partial" if key in (2, 3) else f"s{key}")
    assert labels.values() == ["partial", "partial", "s4", "partial"]
    assert labels.labels == ("partial", "s4")


def test_concat_unifies_text_columns_and_keeps_row_order() -> None:
    first = JobTable.build(job_id=[1, 2], submit_s=[0, 5], duration_s=[10, 10], nodes=[1, 2], team=["b", "a"])
    second = JobTable.build(job_id=[3], submit_s=[1], duration_s=[4], nodes=[3], team=["c"])
    both = JobTable.concat([first, second])
    assert both.job_id.tolist() == [1, 2, 3]
    assert both.team.values() == ["b", "a", "c"]
    assert both.take(both.queue_order()).job_id.tolist() == [1, 3, 2]


def test_arrow_table_has_the_design_fields() -> None:
    table = JobTable.build(job_id=[1], submit_s=[0], duration_s=[10], nodes=[2], gpus_per_node=8).to_arrow()
    assert table.column_names[:14] == [
        "job_id", "user", "team", "submit_s", "duration_s", "time_limit_s", "nodes", "gpus_per_node",
        "cpus_per_node", "mem_per_node", "partition", "qos", "kind", "state",
    ]  # fmt: skip
    assert table.column("gpus_per_node").to_pylist() == [8]


@given(
    hnp.arrays(
        np.int64,
        st.tuples(st.integers(1, 4), st.integers(0, 40)),
        elements=st.one_of(st.integers(-3, 5), st.integers(-(2**40), 2**40)),
    )
)
def test_unique_columns_is_numpys_unique_over_columns(keys: np.ndarray) -> None:
    # one mixed-radix key per column where the ranges allow, NumPy's own way where they do not
    distinct, inverse = unique_columns(keys)
    expected, expected_inverse = np.unique(keys, axis=1, return_inverse=True)
    assert distinct.dtype == np.int64 and inverse.dtype == np.int64
    assert np.array_equal(distinct, expected)
    assert np.array_equal(inverse, expected_inverse.reshape(-1))
