"""``gpuplan prices --refresh``'s reading of Oracle's price list (gpuplan.cost.refresh).

tests/data/oci_price_list_sample.json is a response in the shape of Oracle's products API
(``{"lastUpdated", "items": [{partNumber, displayName, metricName, serviceCategory,
currencyCodeLocalizations: [{currencyCode, prices: [{model, value}]}]}]}``), trimmed to the GPU
parts gpuplan maps, look-alikes it must not take (H100T, an NVIDIA AI Enterprise licence billed
per GPU-hour), CPU, memory, storage and free-tier records, and no record for BM.GPU4.8's part
(B92740): that shape is the one the list does not price. Its GPU-hour values are those published
for these parts (see PART_NUMBERS' sources), so the node-hour prices are issue 40's catalogue.
"""

from __future__ import annotations

import json
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from gpuplan.cost.refresh import (
    PART_NUMBERS,
    PRICE_LIST_URL,
    PriceRecord,
    fetch,
    local_copy_name,
    node_hour_prices,
    read_local_copy,
    write_local_copy,
)
from gpuplan.errors import InputError
from gpuplan.scenario.shapes import load_catalogue

from builders import DATA

SAMPLE = DATA / "oci_price_list_sample.json"

# Every shape issue 40 prices, with its GPUs per node.
GPUS = {
    "BM.GPU.H100.8": 8,
    "BM.GPU.H200.8": 8,
    "BM.GPU.B200.8": 8,
    "BM.GPU.B300.8": 8,
    "BM.GPU.GB200.4": 4,
    "BM.GPU.GB300.4": 4,
    "BM.GPU.A100-v2.8": 8,
    "BM.GPU4.8": 8,
    "BM.GPU.L40S.4": 4,
    "BM.GPU.A10.4": 4,
    "VM.GPU.A10.2": 2,
    "VM.GPU.A10.1": 1,
    "BM.GPU.MI300X.8": 8,
    "BM.GPU.MI355X.8": 8,
    "BM.GPU.RTXPRO.8": 8,
}
# USD per node-hour in issue 40 (skypilot-catalog catalogs/v8/oci/vms.csv); BM.GPU4.8 (24.40)
# is the shape the sample leaves unpriced.
EXPECTED = {
    "BM.GPU.H100.8": 80.0,
    "BM.GPU.H200.8": 80.0,
    "BM.GPU.B200.8": 112.0,
    "BM.GPU.B300.8": 120.0,
    "BM.GPU.GB200.4": 64.0,
    "BM.GPU.GB300.4": 72.0,
    "BM.GPU.A100-v2.8": 32.0,
    "BM.GPU.L40S.4": 14.0,
    "BM.GPU.A10.4": 8.0,
    "VM.GPU.A10.2": 4.0,
    "VM.GPU.A10.1": 2.0,
    "BM.GPU.MI300X.8": 48.0,
    "BM.GPU.MI355X.8": 68.8,
    "BM.GPU.RTXPRO.8": 36.0,
}


def sample() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SAMPLE.read_text())
    return data


def gpu_record(part: str, value: Any, metric: str = "GPU Per Hour") -> dict[str, Any]:
    return {
        "partNumber": part,
        "displayName": f"Compute - GPU - {part}",
        "metricName": metric,
        "serviceCategory": "Compute - GPU",
        "currencyCodeLocalizations": [
            {"currencyCode": "USD", "prices": [{"model": "PAY_AS_YOU_GO", "value": value}]}
        ],
    }


def test_the_recorded_response_gives_the_node_hour_prices() -> None:
    prices = node_hour_prices(sample(), GPUS)
    assert {shape: record.usd_per_node_hour for shape, record in prices.items()} == pytest.approx(EXPECTED)
    assert set(prices) == set(EXPECTED)  # BM.GPU4.8 is left out: the list has no B92740
    h100 = prices["BM.GPU.H100.8"]
    assert h100 == PriceRecord(
        shape="BM.GPU.H100.8",
        part_number="B98415",
        usd_per_node_hour=80.0,
        unit="GPU Per Hour",
        display_name="Oracle Cloud Infrastructure - Compute - GPU - H100",
    )
    # one A10 part, three shapes, priced by their own GPU counts
    assert {prices[s].part_number for s in ("BM.GPU.A10.4", "VM.GPU.A10.1", "VM.GPU.A10.2")} == {"B95909"}


def test_shapes_without_a_part_or_a_price_are_left_out() -> None:
    raw = sample()
    assert node_hour_prices(raw, {"BM.GPU.NEW.8": 8, "BM.GPU4.8": 8}) == {}
    # a part priced at 0 (as free-tier parts are) is not a GPU price
    raw["items"].append(gpu_record("B92740", 0))
    assert node_hour_prices(raw, {"BM.GPU4.8": 8}) == {}
    raw["items"][-1] = gpu_record("B92740", 3.05)
    assert node_hour_prices(raw, {"BM.GPU4.8": 8})["BM.GPU4.8"].usd_per_node_hour == pytest.approx(24.4)


def test_every_catalogue_shape_has_a_part_number() -> None:
    catalogue = {name: shape.gpus_per_node for name, shape in load_catalogue().items()}
    assert set(catalogue) <= set(PART_NUMBERS), sorted(set(catalogue) - set(PART_NUMBERS))
    prices = node_hour_prices(sample(), catalogue)
    assert set(catalogue) - set(prices) <= {"BM.GPU4.8"}
    for name, record in prices.items():
        assert record.usd_per_node_hour == pytest.approx(EXPECTED[name])


@pytest.mark.parametrize(
    ("items", "field", "words"),
    [
        ([gpu_record("B98415", 80, metric="Node Per Hour")], "items[0] (B98415).metricName", "Node Per Hour"),
        ([gpu_record("B98415", "10")], "items[0] (B98415).value", "'10'"),
        ([gpu_record("B98415", 10), gpu_record("B98415", 12)], "items[1] (B98415).value", "two prices"),
    ],
)
def test_a_record_that_cannot_be_read_is_refused(items: list[Any], field: str, words: str) -> None:
    with pytest.raises(InputError) as caught:
        node_hour_prices({"items": items}, {"BM.GPU.H100.8": 8})
    assert caught.value.field == field
    assert words in str(caught.value)


def test_price_tiers_are_refused() -> None:
    record = gpu_record("B98415", 10)
    record["currencyCodeLocalizations"][0]["prices"].append({"model": "PAY_AS_YOU_GO", "value": 9})
    with pytest.raises(InputError, match="2 PAY_AS_YOU_GO prices"):
        node_hour_prices({"items": [record]}, {"BM.GPU.H100.8": 8})


def test_a_list_without_items_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        node_hour_prices({"products": []}, {"BM.GPU.H100.8": 8})
    assert caught.value.field == "items"


def test_a_copy_written_and_read_back_is_identical(tmp_path: Path) -> None:
    prices = node_hour_prices(sample(), GPUS)
    path = write_local_copy(prices, tmp_path / "prices", fetched_on=date(2026, 11, 30), url=PRICE_LIST_URL)
    assert path == tmp_path / "prices" / "oci-prices-2026-11-30.json"
    assert path.name == local_copy_name(date(2026, 11, 30))
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    again, header = read_local_copy(path)
    assert again == prices
    assert header["url"] == PRICE_LIST_URL
    assert header["date"] == date(2026, 11, 30)
    assert "Oracle" in header["source"] and header["unit"] == "USD per node-hour"


def _write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d.pop("url"), "url"),
        (lambda d: d.update(date="30/11/2026"), "date"),
        (lambda d: d.update(prices={}), "prices"),
        (lambda d: d["prices"][1].pop("unit"), "prices[1].unit"),
        (lambda d: d["prices"][0].update(usd_per_node_hour=-1), "prices[0].usd_per_node_hour"),
        (lambda d: d["prices"][0].update(usd_per_node_hour=True), "prices[0].usd_per_node_hour"),
        (lambda d: d["prices"][0].update(shape=8), "prices[0].shape"),
        (lambda d: d["prices"][0].update(extra=1), "prices[0].extra"),
        (lambda d: d["prices"].append(dict(d["prices"][0])), "prices[14].shape"),
    ],
)
def test_a_malformed_copy_names_the_field(tmp_path: Path, edit: Any, field: str) -> None:
    path = write_local_copy(
        node_hour_prices(sample(), GPUS), tmp_path, fetched_on=date(2026, 11, 30), url=PRICE_LIST_URL
    )
    document = json.loads(path.read_text())
    edit(document)
    _write(path, document)
    with pytest.raises(InputError) as caught:
        read_local_copy(path)
    assert caught.value.field == field
    assert caught.value.path == str(path)


def test_a_copy_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "oci-prices-2026-11-30.json"
    path.write_text('{\n  "url": "x",\n  oops\n}\n')
    with pytest.raises(InputError) as caught:
        read_local_copy(path)
    assert caught.value.line == 3
    with pytest.raises(InputError, match="cannot read"):
        read_local_copy(tmp_path / "absent.json")


def test_an_unreachable_list_fails_fast_and_writes_nothing(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/"
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        prices = node_hour_prices(fetch(url, timeout_s=5.0), GPUS)
        write_local_copy(prices, tmp_path, fetched_on=date(2026, 11, 30), url=url)
    assert time.monotonic() - started < 5.0
    message = str(caught.value)
    assert message.startswith(f"cannot reach Oracle's price list ({url}): ")
    assert message.endswith("; the bundled prices are unchanged")
    assert "Traceback" not in message
    assert list(tmp_path.iterdir()) == []


def test_only_http_addresses_are_fetched() -> None:
    with pytest.raises(InputError, match="must be http"):
        fetch("file:///etc/passwd")


def test_fetch_reads_the_list(server: str, tmp_path: Path) -> None:
    raw = fetch(f"{server}/products/")
    assert raw == sample()
    prices = node_hour_prices(raw, GPUS)
    path = write_local_copy(prices, tmp_path, fetched_on=date(2026, 11, 30), url=f"{server}/products/")
    assert read_local_copy(path)[0] == prices


@pytest.mark.parametrize(
    ("route", "words"),
    [
        ("/html/", "the answer is not JSON"),
        ("/array/", "expected a JSON object, got list"),
        ("/binary/", "not UTF-8"),
        ("/down/", "cannot reach Oracle's price list"),
    ],
)
def test_a_bad_answer_is_refused_and_nothing_is_written(
    server: str, tmp_path: Path, route: str, words: str
) -> None:
    with pytest.raises(InputError) as caught:
        prices = node_hour_prices(fetch(f"{server}{route}"), GPUS)
        write_local_copy(prices, tmp_path, fetched_on=date(2026, 11, 30), url=f"{server}{route}")
    assert words in str(caught.value)
    assert str(caught.value).endswith("the bundled prices are unchanged")
    assert list(tmp_path.iterdir()) == []
