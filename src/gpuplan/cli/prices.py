"""``gpuplan prices [--refresh]``: the OCI prices gpuplan uses, with their sources and dates."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from gpuplan.cli.common import call, console


def prices(
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Read Oracle's public price list (the cost estimator's products API) and write a dated "
            "local copy in --out; the bundled prices stay the default.",
        ),
    ] = False,
    price_list: Annotated[
        Path | None, typer.Option("--price-list", help="Show a local copy written by --refresh.")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for the refreshed copy.")] = Path("."),
) -> None:
    """Print the price per node-hour of every OCI GPU shape in the catalogue, with its source and date,
    and whether Oracle offers it as preemptible capacity.

    Examples: gpuplan prices; gpuplan prices --refresh --out prices/
    """
    from rich.table import Table

    from gpuplan.scenario.shapes import load_catalogue

    catalogue = call(load_catalogue)
    refreshed: dict[str, float] = {}
    header = ""
    if refresh or price_list is not None:
        from gpuplan.cost import refresh as fetcher

        if refresh:
            gpus = {name: shape.gpus_per_node for name, shape in catalogue.items()}
            records = call(lambda: fetcher.node_hour_prices(fetcher.fetch(fetcher.PRICE_LIST_URL), gpus))
            written = call(
                lambda: fetcher.write_local_copy(
                    records, out, fetched_on=dt.date.today(), url=fetcher.PRICE_LIST_URL
                )
            )
            header = f"refreshed from {fetcher.PRICE_LIST_URL} on {dt.date.today().isoformat()}: {written}"
        else:
            assert price_list is not None
            records, meta = call(lambda: fetcher.read_local_copy(price_list))
            header = f"local copy {price_list} ({meta.get('url')}, {meta.get('date')})"
        refreshed = {shape: record.usd_per_node_hour for shape, record in records.items()}
    table = Table(title="OCI GPU shapes: pay-as-you-go list prices (USD)")
    for column in ("shape", "GPUs", "per node-hour", "per GPU-hour", "preemptible", "source"):
        table.add_column(
            column, justify="right" if column in ("GPUs", "per node-hour", "per GPU-hour") else "left"
        )
    if refreshed:
        table.add_column("refreshed per node-hour", justify="right")
    for name, shape in sorted(catalogue.items()):
        node = shape.price_per_node_hour_usd
        row = [
            name,
            str(shape.gpus_per_node),
            "-" if node is None else f"{node:,.2f}",
            "-" if node is None else f"{node / shape.gpus_per_node:,.2f}",
            "yes" if shape.preemptible_allowed else "no (bare metal)",
            shape.sources.get("price_per_node_hour_usd", "no public price read"),
        ]
        if refreshed:
            row.append("-" if name not in refreshed else f"{refreshed[name]:,.2f}")
        table.add_row(*row)
    stdout = console()
    stdout.print(table)
    if header:
        stdout.print(header, soft_wrap=True)
    missing = sorted(set(catalogue) - set(refreshed)) if refreshed else []
    if missing:
        stdout.print(
            f"not in Oracle's list: {', '.join(missing)} (their catalogue prices stand)", soft_wrap=True
        )
