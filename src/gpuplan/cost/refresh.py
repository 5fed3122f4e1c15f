"""``gpuplan prices --refresh``: OCI GPU list prices read from Oracle's public price list.

Oracle's price list is public JSON, the products API behind the OCI cost estimator
(``PRICE_LIST_URL``; no account or key). Each record is one part (SKU)::

    {"lastUpdated": "2026-...", "items": [
      {"partNumber": "B98415",
       "displayName": "Oracle Cloud Infrastructure - Compute - GPU - H100",
       "metricName": "GPU Per Hour", "serviceCategory": "Compute - GPU",
       "currencyCodeLocalizations": [
         {"currencyCode": "USD", "prices": [{"model": "PAY_AS_YOU_GO", "value": 10}]}]},
      ...]}

A shape is not a record: a GPU shape is billed under one part number, and the price of a GPU part
is per GPU per hour (``metricName`` "GPU Per Hour"). gpuplan stores USD per node-hour, so a shape's
price is the part's pay-as-you-go value times the shape's GPUs per node: B98415 at 10 USD per GPU-hour
is 80 USD per node-hour for BM.GPU.H100.8. Any other metric is refused rather than guessed at.

Which part number bills which shape is not in the price list. Oracle states it in the cost
estimator's shape data (https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json: for
each shape, ``products`` with ``type.value == "ocpu"`` and its ``partNumber``), which SkyPilot's
OCI catalogue fetcher (skypilot-org/skypilot, sky/catalog/data_fetchers/fetch_oci.py) reads at
run time together with this price list, multiplying a "GPU Per Hour" part by the shape's GPU count.
That file is not vendored here (no copy of it could be read); ``PART_NUMBERS`` below records the
mapping with the source each entry was read from.

The use:

    >>> raw = fetch()  # doctest: +SKIP
    >>> prices = node_hour_prices(raw, {"BM.GPU.H100.8": 8})  # doctest: +SKIP
    >>> write_local_copy(prices, Path("prices"), fetched_on=date.today(), url=PRICE_LIST_URL)
    ... # doctest: +SKIP

A fetch that fails raises ``InputError`` before anything is written: the bundled prices stay as
they are. Nothing here runs unless asked (``--refresh``): no run of gpuplan calls the network.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date
from http.client import HTTPException
from pathlib import Path
from typing import Any

from gpuplan import __version__
from gpuplan.errors import InputError
from gpuplan.results.files import write_json

# The OCI cost estimator's products API, USD records only. Endpoint as SkyPilot's OCI fetcher
# uses it (skypilot-org/skypilot, sky/catalog/data_fetchers/fetch_oci.py, PRICE_LIST_URL); Oracle
# documents the API in "Estimating Costs" (https://docs.oracle.com/en-us/iaas/Content/GSG/Tasks/
# signingup_topic-Estimating_Costs.htm#accessing_list_pricing), including the currencyCode query.
PRICE_LIST_URL = "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/?currencyCode=USD"

CURRENCY = "USD"
PRICE_MODEL = "PAY_AS_YOU_GO"
# The one billing metric gpuplan converts: USD per GPU per hour, times GPUs per node.
PER_GPU_HOUR = "GPU Per Hour"
# The whole price list is a few MB; anything far larger is not it.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024

# Shape -> the part number it is billed under.
#
# From Oracle's cost estimator shape data (shapes.json, each shape's "ocpu" product), as excerpted
# in dstackai/gpuhunt, src/tests/providers/test_oci.py ("Real GPU shapes as reported by the Cost
# Estimator on 2026-09-18"; MPL-2.0; facts only, no code taken): H100, GPU4 (A100 40GB), A100-v2,
# MI300X, MI355X, GB200 (listed there as "BM.GPU.GB200.4 (NVL72)"), GB300, B300, RTXPRO.
# B200 (and again B300, GB200, GB300): elizaOS/blackwell-index, docs/PROVIDERS.md, a table of part
# number, shape and "GPU Per Hour" price observed on this API on 2026-09-06.
# H200, L40S, A10: only from secondary sources (third-party collectors of this API that name the
# shape beside the part number), not from Oracle's shapes.json; marked below. Every entry agrees
# with the issue 40 catalogue (skypilot-catalog catalogs/v8/oci/vms.csv, built from shapes.json and
# this list): part price times GPUs per node gives that file's node-hour figure for all 15 shapes.
PART_NUMBERS: dict[str, str] = {
    "BM.GPU.H100.8": "B98415",
    "BM.GPU.H200.8": "B110519",  # secondary source only
    "BM.GPU.B200.8": "B110978",
    "BM.GPU.B300.8": "B112237",
    "BM.GPU.GB200.4": "B110979",
    "BM.GPU.GB300.4": "B112140",
    "BM.GPU.A100-v2.8": "B95907",
    "BM.GPU4.8": "B92740",
    "BM.GPU.L40S.4": "B109479",  # secondary source only
    "BM.GPU.A10.4": "B95909",  # secondary source only; one A10 part bills all three A10 shapes
    "VM.GPU.A10.1": "B95909",
    "VM.GPU.A10.2": "B95909",
    "BM.GPU.MI300X.8": "B109485",
    "BM.GPU.MI355X.8": "B111758",
    "BM.GPU.RTXPRO.8": "B112613",
}

_RECORD_FIELDS = ("shape", "part_number", "usd_per_node_hour", "unit", "display_name")


@dataclass(frozen=True)
class PriceRecord:
    """One shape's pay-as-you-go list price from Oracle's price list.

    ``usd_per_node_hour`` is already converted to one node (the part's price times GPUs per node);
    ``unit`` is the part's billing metric as Oracle states it (``"GPU Per Hour"``) and
    ``display_name`` the part's name in the list, kept so a reader can check the mapping.

        >>> PriceRecord("BM.GPU.H100.8", "B98415", 80.0, "GPU Per Hour", "Compute - GPU - H100").shape
        'BM.GPU.H100.8'
    """

    shape: str
    part_number: str
    usd_per_node_hour: float
    unit: str
    display_name: str


def fetch(url: str = PRICE_LIST_URL, timeout_s: float = 20.0) -> dict[str, Any]:
    """Oracle's price list as decoded JSON; ``InputError`` if it cannot be read or is not JSON.

    >>> raw = fetch()  # doctest: +SKIP
    >>> sorted(raw)  # doctest: +SKIP
    ['items', 'lastUpdated']
    """
    if not url.startswith(("https://", "http://")):
        raise InputError(f"the price list address must be http(s), got {url!r}", field="url")
    request = urllib.request.Request(
        url, headers={"Accept": "application/json", "User-Agent": f"gpuplan/{__version__}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read(MAX_RESPONSE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise _unreachable(url, f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise _unreachable(url, str(exc.reason)) from None
    except TimeoutError:
        raise _unreachable(url, f"no answer within {timeout_s:g} s") from None
    except (OSError, HTTPException, ValueError) as exc:
        raise _unreachable(url, str(exc) or type(exc).__name__) from None
    if len(body) > MAX_RESPONSE_BYTES:
        raise _not_the_list(url, f"the answer is larger than {MAX_RESPONSE_BYTES // 2**20} MB")
    try:
        raw = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise _not_the_list(url, "the answer is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _not_the_list(url, f"the answer is not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise _not_the_list(url, f"expected a JSON object, got {type(raw).__name__}")
    return raw


def _unreachable(url: str, reason: str) -> InputError:
    return InputError(f"cannot reach Oracle's price list ({url}): {reason}; the bundled prices are unchanged")


def _not_the_list(url: str, reason: str) -> InputError:
    return InputError(
        f"Oracle's price list ({url}) could not be read: {reason}; the bundled prices are unchanged"
    )


def node_hour_prices(raw: Mapping[str, Any], shapes: Mapping[str, int]) -> dict[str, PriceRecord]:
    """The price per node-hour of each of ``shapes`` (name -> GPUs per node) that the list prices.

    A shape without a part number in ``PART_NUMBERS``, or whose part the list does not price in
    USD pay-as-you-go (or prices at 0), is left out: the caller reports it. A record that is there
    but cannot be read (a part billed in another metric, two different prices for one part) raises
    ``InputError`` naming the record.

        >>> raw = {"items": [{"partNumber": "B98415", "displayName": "Compute - GPU - H100",
        ...   "metricName": "GPU Per Hour", "currencyCodeLocalizations": [{"currencyCode": "USD",
        ...   "prices": [{"model": "PAY_AS_YOU_GO", "value": 10}]}]}]}
        >>> node_hour_prices(raw, {"BM.GPU.H100.8": 8})["BM.GPU.H100.8"].usd_per_node_hour
        80.0
    """
    items = raw.get("items")
    if not isinstance(items, list):
        raise InputError("Oracle's price list has no 'items' list; has its format changed?", field="items")
    wanted = {PART_NUMBERS[shape] for shape in shapes if shape in PART_NUMBERS}
    parts: dict[str, tuple[float, str, str]] = {}  # part -> (USD per unit, unit, display name)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or item.get("partNumber") not in wanted:
            continue
        part = str(item["partNumber"])
        where = f"items[{index}] ({part})"
        value = _pay_as_you_go_usd(item, where)
        if value is None:
            continue
        unit = item.get("metricName")
        if not isinstance(unit, str) or " ".join(unit.split()).casefold() != PER_GPU_HOUR.casefold():
            raise InputError(
                f"billed per {unit!r}, not per {PER_GPU_HOUR!r}: gpuplan cannot turn it into a "
                "price per node-hour",
                field=f"{where}.metricName",
            )
        name = item.get("displayName")
        entry = (value, unit, name.strip() if isinstance(name, str) else "")
        if part in parts and parts[part][0] != value:
            raise InputError(
                f"two prices for one part: {parts[part][0]:g} and {value:g} USD", field=f"{where}.value"
            )
        parts[part] = entry
    prices: dict[str, PriceRecord] = {}
    for shape, gpus in shapes.items():
        billed_as = PART_NUMBERS.get(shape)
        if billed_as is None or billed_as not in parts:
            continue
        value, unit, name = parts[billed_as]
        prices[shape] = PriceRecord(shape, billed_as, round(value * gpus, 6), unit, name)
    return prices


def _pay_as_you_go_usd(item: Mapping[str, Any], where: str) -> float | None:
    """The part's USD pay-as-you-go value; None if the record has none (or 0: not a GPU price)."""
    localizations = item.get("currencyCodeLocalizations")
    if not isinstance(localizations, list):
        return None
    values: list[Any] = [
        price.get("value")
        for localization in localizations
        if isinstance(localization, Mapping) and localization.get("currencyCode") == CURRENCY
        for price in localization.get("prices") or []
        if isinstance(price, Mapping) and price.get("model") == PRICE_MODEL
    ]
    if not values:
        return None
    if len(values) > 1:
        raise InputError(
            f"{len(values)} {PRICE_MODEL} prices in {CURRENCY} (price tiers?); expected one",
            field=f"{where}.currencyCodeLocalizations",
        )
    value = values[0]
    if not _is_number(value) or value < 0:
        raise InputError(f"expected a price in {CURRENCY}, got {value!r}", field=f"{where}.value")
    return float(value) if value > 0 else None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def local_copy_name(fetched_on: date) -> str:
    """``oci-prices-YYYY-MM-DD.json``, the name of the copy written on ``fetched_on``."""
    return f"oci-prices-{fetched_on.isoformat()}.json"


def write_local_copy(
    prices: Mapping[str, PriceRecord], directory: Path, *, fetched_on: date, url: str
) -> Path:
    """Write ``prices`` to ``directory/oci-prices-YYYY-MM-DD.json`` whole or not at all; its path.

    The file holds the source (``url``), the date and every record, in shape order.

        >>> write_local_copy(prices, Path("prices"), fetched_on=date(2026, 11, 30), url=PRICE_LIST_URL)
        ... # doctest: +SKIP
        PosixPath('prices/oci-prices-2026-11-30.json')
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the directory: {exc.strerror or exc}", path=directory) from None
    document = {
        "source": "Oracle Cloud price list (OCI cost estimator products API), pay-as-you-go, USD",
        "url": url,
        "date": fetched_on.isoformat(),
        "unit": "USD per node-hour",
        "prices": [asdict(prices[shape]) for shape in sorted(prices)],
    }
    return write_json(directory / local_copy_name(fetched_on), document)


def read_local_copy(path: Path) -> tuple[dict[str, PriceRecord], dict[str, Any]]:
    """The records of a copy ``write_local_copy`` wrote, by shape, and its header (``url``, ``date``
    as a ``datetime.date``, ``source``, ``unit``); ``InputError`` naming the field if malformed.

        >>> prices, header = read_local_copy(Path("prices/oci-prices-2026-11-30.json"))  # doctest: +SKIP
        >>> header["date"]  # doctest: +SKIP
        datetime.date(2026, 11, 30)
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read the price copy: {reason}", path=path) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from None
    if not isinstance(document, dict):
        raise InputError("expected a JSON object with url, date and prices", path=path)

    def fail(field: str, problem: str) -> InputError:
        return InputError(problem, path=path, field=field)

    url = document.get("url")
    if not isinstance(url, str) or not url:
        raise fail("url", f"expected the price list's address, got {url!r}")
    when = document.get("date")
    try:
        fetched_on = date.fromisoformat(when) if isinstance(when, str) else None
    except ValueError:
        fetched_on = None
    if fetched_on is None:
        raise fail("date", f"expected a date like 2026-11-30, got {when!r}")
    records = document.get("prices")
    if not isinstance(records, list):
        raise fail("prices", "expected a list of price records")
    prices: dict[str, PriceRecord] = {}
    for index, record in enumerate(records):
        where = f"prices[{index}]"
        if not isinstance(record, dict):
            raise fail(where, "expected an object")
        missing = [name for name in _RECORD_FIELDS if name not in record]
        if missing:
            raise fail(f"{where}.{missing[0]}", "missing")
        unknown = sorted(set(record) - set(_RECORD_FIELDS))
        if unknown:
            raise fail(f"{where}.{unknown[0]}", "unknown field")
        for name in ("shape", "part_number", "unit", "display_name"):
            if not isinstance(record[name], str):
                raise fail(f"{where}.{name}", f"expected text, got {record[name]!r}")
        price = record["usd_per_node_hour"]
        if not _is_number(price) or price <= 0:
            raise fail(f"{where}.usd_per_node_hour", f"expected a price > 0 in USD, got {price!r}")
        if record["shape"] in prices:
            raise fail(f"{where}.shape", f"{record['shape']} appears twice")
        prices[record["shape"]] = PriceRecord(
            shape=record["shape"],
            part_number=record["part_number"],
            usd_per_node_hour=float(price),
            unit=record["unit"],
            display_name=record["display_name"],
        )
    header = {key: value for key, value in document.items() if key != "prices"}
    header["date"] = fetched_on
    return prices, header
