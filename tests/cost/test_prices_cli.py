"""``gpuplan prices``: the catalogue's prices with their sources; ``--refresh`` on a recorded response,
and offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplan.cost import refresh
from gpuplan.scenario.shapes import load_catalogue

from builders import gpuplan


@pytest.fixture
def recorded(server: str) -> str:
    """The recorded response's address (conftest.py's stand-in for Oracle's API)."""
    return f"{server}/products/"


def test_prices_lists_every_shape_with_its_source() -> None:
    code, out, _ = gpuplan("prices")
    assert code == 0
    for name, shape in load_catalogue().items():
        line = next(row for row in out.splitlines() if f" {name} " in row)
        if shape.price_per_node_hour_usd is not None:
            assert f"{shape.price_per_node_hour_usd:,.2f}" in line and "skypilot-catalog" in line, line
        assert ("no (bare metal)" in line) == name.startswith("BM."), line


def test_refresh_writes_a_dated_copy_from_the_recorded_response(
    recorded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh, "PRICE_LIST_URL", recorded)
    code, out, err = gpuplan("prices", "--refresh", "--out", str(tmp_path))
    assert code == 0, err
    (copy,) = tmp_path.iterdir()
    assert copy.name.startswith("oci-prices-") and copy.suffix == ".json"
    records, header = refresh.read_local_copy(copy)
    assert records["BM.GPU.H100.8"].usd_per_node_hour == 80.0 and header["url"] == recorded
    assert "refreshed from" in out and "80.00" in out
    code, shown, _ = gpuplan("prices", "--price-list", str(copy))
    assert code == 0 and f"local copy {copy}" in " ".join(shown.split())


def test_refresh_offline_fails_cleanly_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh, "PRICE_LIST_URL", "http://127.0.0.1:9/products/")
    before = {name: shape.price_per_node_hour_usd for name, shape in load_catalogue().items()}
    code, out, err = gpuplan("prices", "--refresh", "--out", str(tmp_path))
    assert code == 2 and out == ""
    assert "cannot reach Oracle's price list" in err and "the bundled prices are unchanged" in err
    assert "Traceback" not in err and list(tmp_path.iterdir()) == []
    assert {name: shape.price_per_node_hour_usd for name, shape in load_catalogue().items()} == before


def test_a_scenario_prices_its_pools_from_a_refreshed_copy(
    recorded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh, "PRICE_LIST_URL", recorded)
    assert gpuplan("prices", "--refresh", "--out", str(tmp_path))[0] == 0
    (copy,) = tmp_path.glob("oci-prices-*.json")
    records, _ = refresh.read_local_copy(copy)
    scenario = tmp_path / "listed.yaml"
    scenario.write_text(
        "name: listed\nhorizon: 1d\n"
        f"cluster:\n  price_list: {copy.name}\n"
        "  pools:\n    - {name: h100, shape: BM.GPU.H100.8, nodes: 2}\n"
        "teams:\n  - {name: research}\n"
        "workloads:\n  - {name: t, kind: batch, team: research, arrival: {rate: 4/day}, size: '1x8',"
        " duration: {median: 1h}}\n"
    )
    out = tmp_path / "out"
    code, _, err = gpuplan("simulate", str(scenario), "--out", str(out), "-q")
    assert code == 0, err
    body = json.loads((out / "summary.json").read_text())["models"]["slurm"]
    pool = body["cluster"]["pools"]["h100"]
    assert pool["price_source"].startswith(
        "refreshed list price of BM.GPU.H100.8: Oracle's price list as refreshed on"
    )
    assert pool["price_per_node_hour"] == records["BM.GPU.H100.8"].usd_per_node_hour
    copy.unlink()
    code, _, err = gpuplan("simulate", str(scenario), "--out", str(out), "-q")
    assert code == 2 and copy.name in err and "Traceback" not in err
