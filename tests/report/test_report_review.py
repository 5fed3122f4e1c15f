"""The report as an architecture review reads it (issue 13, item 10, and what items 1 and 4 add): prose
and tables, never a Python value's repr; costs per pool that add up to the summary's; a headline styled
after the decision; warnings, work not done and an incomplete comparison at the top; the header naming
the scenario and its file; one panel per model over time; one wait axis for every model."""

from __future__ import annotations

import html as html_lib
import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gpuplan.advisor.recommendation import Recommendation, Tip
from gpuplan.inputs import load_input
from gpuplan.recommend import RecommendRequest, bundled_example, recommend
from gpuplan.report import build_report, rebuild
from gpuplan.report.context import plan_blocks, pool_costs, settings_tables
from gpuplan.report.results import read_recommendation
from gpuplan.report.series import CHART_BINS
from gpuplan.report.words import rate
from gpuplan.simulate import SimulateRequest, simulate

from builders import ROOT

EXAMPLES = ROOT / "examples"
TRACE = EXAMPLES / "lublin_256_first2000.swf.gz"

# every pool priced, part of the hybrid split given, routing rules, lending: the cost and plan cases
PRICED = """\
name: priced-rules
description: Every pool priced; the hybrid split given for one pool, with routing rules and lending.
seed: 5
horizon: 3d
cluster:
  pools:
    - {name: gpu, gpus_per_node: 4, nodes: 6, price_per_gpu_hour: 2.5}
    - {name: small, gpus_per_node: 1, nodes: 2, price_per_gpu_hour: 0.8}
teams:
  - {name: research, share: 1}
  - {name: product, persona: app-developer, share: 1}
workloads:
  - name: training
    kind: batch
    team: research
    pool: gpu
    arrival: {rate: 30/day, diurnal: {peak_hour: 14}}
    size: {"1x4": 70, "2x4": 30}
    duration: {median: 3h, sigma: 0.3}
    time_limit: {over_request: 1.5, round_to: 1h}
  - name: notebooks
    kind: interactive
    team: research
    pool: small
    arrival: {rate: 20/day}
    size: "1x1"
    duration: {median: 1h, sigma: 0.5}
  - name: assistant
    kind: service
    team: product
    pool: gpu
    gpus_per_replica: 1
    throughput_per_replica: 10
    replicas: {min: 1, max: 16}
    demand: {peak: 150, trough: 8, peak_hour: 14}
models:
  hybrid:
    split: {gpu: 4}
    routing:
      - {kind: interactive, to: kubernetes}
      - {kind: batch, multi_node: true, to: slurm}
    lending: {policy: kubernetes_borrows, max_nodes: 2}
"""


def _recommended(scenario: Path | None, out: Path) -> Path:
    recommend(RecommendRequest(scenario=scenario, out=out, processes=1))
    return out


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("priced")
    scenario = base / "priced-rules.yaml"
    scenario.write_text(PRICED)
    return _recommended(scenario, base / "out")


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _recommended(None, tmp_path_factory.mktemp("bundled"))


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trace")
    simulate(SimulateRequest(input=TRACE, backfill="easy", out=out))
    rebuild(out)
    return out


@pytest.fixture(scope="module")
def reports(
    tmp_path_factory: pytest.TempPathFactory, priced: Path, bundled: Path, traced: Path
) -> dict[str, Path]:
    """Results of several scenarios (every model compared) and of a trace, with their reports."""
    base = tmp_path_factory.mktemp("scenarios")
    made = {"priced-rules": priced, "mixed-org (bundled)": bundled, "swf trace": traced}
    for scenario in (
        EXAMPLES / "research-lab.yaml",
        EXAMPLES / "product-company.yaml",
        EXAMPLES / "k8s-cohort.yaml",
        ROOT / "tests" / "data" / "report_script_names.yaml",
    ):
        made[scenario.stem] = _recommended(scenario, base / scenario.stem)
    return made


def markdown(results: Path) -> str:
    return (results / "report.md").read_text()


def page(results: Path) -> str:
    return (results / "report.html").read_text()


def page_text(html: str) -> str:
    """What a reader sees in report.html: no scripts (Plotly, chart data), no tags, entities decoded."""
    without_scripts = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", without_scripts))


def figure(html: str, chart_id: str) -> dict[str, Any]:
    found = re.search(rf'<script type="application/json" id="{chart_id}-data">(.*?)</script>', html, re.S)
    assert found, chart_id
    parsed: dict[str, Any] = json.loads(found.group(1))
    return parsed


def section(markdown_text: str, title: str) -> str:
    return markdown_text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _summary(results: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((results / "summary.json").read_text())
    return summary


# ---- no Python in the text -------------------------------------------------------------------------

PYTHON_LOOKS = {
    "a dict repr": re.compile(r"\{'|\{\"|'\s*:\s|\":\s"),
    "a list repr": re.compile(r"\['|\[\]|\[\d"),
    "escaped braces or brackets (Markdown of a repr)": re.compile(r"\\[{}\[\]]"),
    "scientific notation": re.compile(r"\d(\.\d+)?[eE][-+]?\d"),
    "a Python constant": re.compile(r"\b(True|False|None)\b"),
}


def python_looks(text: str) -> list[str]:
    return [
        f"{name}: ...{text[max(m.start() - 40, 0) : m.end() + 40]!r}..."
        for name, pattern in PYTHON_LOOKS.items()
        for m in pattern.finditer(text)
    ]


def test_no_python_repr_in_either_report(reports: dict[str, Path]) -> None:
    for name, results in reports.items():
        assert python_looks(markdown(results)) == [], name
        assert python_looks(page_text(page(results))) == [], name


def test_the_scan_catches_what_the_report_used_to_print() -> None:
    old = "| split | \\{'h100': \\{'slurm': 7\\}\\} |\narrival: rate 6.944444444444444e-05; kueue True"
    found = " ".join(python_looks(old))
    assert "a dict repr" in found and "scientific notation" in found and "a Python constant" in found


# ---- the plan, the workloads and the settings in words ----------------------------------------------


def test_hybrid_plan_is_a_table_and_sentences(priced: Path, bundled: Path) -> None:
    text = markdown(priced)
    split = _summary(priced)["models"]["hybrid"]["settings"]["split"]
    plan = section(text, "Recommendation").split("**Plan of hybrid", 1)[1]
    assert "| pool | Slurm nodes | Kubernetes nodes | split |" in plan
    given = "given in the scenario"
    assert f"| gpu | {split['gpu']['slurm']} | {split['gpu']['kubernetes']} | {given} |" in plan
    small = split["small"]
    assert f"| small | {small['slurm']} | {small['kubernetes']} | proposed by gpuplan |" in plan
    assert (
        "Routing, first matching rule first: (1) interactive jobs go to Kubernetes; (2) multi-node batch "
        "jobs go to Slurm; then the default: services and pipelines go to Kubernetes, other jobs to Slurm."
    ) in plan
    assert (
        "Lending: Kubernetes borrows Slurm nodes when services' pods cannot be placed (idle nodes first) "
        "and gives them back once unneeded; Slurm may lend at most 2 nodes of each pool; a node leaving "
        "Slurm drains for 5 min"
    ) in plan
    bundled_plan = section(markdown(bundled), "Recommendation")
    assert "Routing: services and pipelines go to Kubernetes, other jobs to Slurm (the default)." in (
        bundled_plan
    )
    assert "Lending: none. The split is static" in bundled_plan


def test_lending_and_rerouting_in_words() -> None:
    plan = {
        "split": {"gpu": {"slurm": 4, "kubernetes": 2}},
        "lending": {
            "policy": "kubernetes_borrows",
            "moves_to_kubernetes": {"gpu": 3},
            "node_hours_lent": {"gpu": 12.5},
            "gpu_hours_in_transit": 2.0,
        },
        "routing": "default: services and pipelines to kubernetes, other jobs to slurm",
        "rerouted": {"nightly": {"to": "slurm", "jobs": 28}},
    }
    blocks = plan_blocks("hybrid", plan, {"split_source": {"gpu": "scenario"}}, None)
    sentences = " ".join(getattr(b, "text", "") for b in blocks)
    assert "Kubernetes borrows Slurm nodes when services' pods cannot be placed" in sentences
    assert "In this run: pool gpu: 3 moves, 12 node-hours lent; 2 GPU-hours spent draining" in sentences
    assert "28 jobs of nightly to Slurm" in sentences
    assert python_looks(sentences) == []


def test_workloads_read_with_units(bundled: Path) -> None:
    assumptions = section(markdown(bundled), "Assumptions")
    # examples/mixed-org.yaml: rate 6/day, size {"1x8": 60, "2x8": 30, "4x8": 10}, median 5h, max 3d
    row = next(line for line in assumptions.splitlines() if line.startswith("| research-training |"))
    assert "6 jobs per day, peaking at 16:00" in row and "weekends at 30 % of the weekday rate" in row
    assert "1x8 (60 %), 2x8 (30 %), 4x8 (10 %)" in row
    assert "median 5.0 h (lognormal, sigma 1.1), at most 3.0 d" in row
    service = next(line for line in assumptions.splitlines() if line.startswith("| assistant |"))
    assert "2 to 12 of 1 GPU" in service and "10 to 90 requests/s, peak at 15:00" in service
    assert "demand served 99.0% of the time" in service
    assert "| p95 wait | at most 8.0 h |" in assumptions  # not "8h" as written, nor 28800


@pytest.mark.parametrize(
    ("per_second", "shown"),
    [
        (6 / 86400, "6 jobs per day"),
        (30 / 86400, "30 jobs per day"),
        (10 / 3600, "10 jobs per hour"),
        (2 / (7 * 86400), "2 jobs per week"),
        (1 / 86400 / 3, "2.33 jobs per week"),
    ],
)
def test_rates_in_the_unit_that_reads_best(per_second: float, shown: str) -> None:
    assert rate(per_second) == shown


def test_settings_records_become_tables_of_their_own() -> None:
    settings = {
        "backfill": "easy",
        "bf_window": 1440,
        "max_age_s": 604800.0,
        "kueue": True,
        "accounting_storage_enforce": ["associations", "limits"],
        "qos": [{"name": "interactive", "max_wall_s": 28800.0, "grp_gpus": None, "preempt": []}],
        "slurm": {"backfill": "slurm", "bf_interval": 30},
    }
    main, qos, side = settings_tables("Settings of m", settings)
    assert main.rows == [
        ["backfill", "easy"],
        ["bf_window", "1440"],
        ["max_age_s", "7.0 d"],
        ["kueue", "yes"],
        ["accounting_storage_enforce", "associations, limits"],
    ]
    assert qos.title == "Settings of m: qos" and qos.columns == ["name", "max_wall_s", "grp_gpus", "preempt"]
    assert qos.rows == [["interactive", "8.0 h", "not set", "none"]]
    assert side.title == "Settings of m: Slurm side" and side.rows == [
        ["backfill", "slurm"],
        ["bf_interval", "30"],
    ]


def test_tips_read_as_sentences(bundled: Path, tmp_path: Path) -> None:
    results = _copy(bundled, tmp_path)
    tips = [
        Tip(kind="target", change="targets.p95_wait: 6.0 h -> 34 min", new_choice="slurm",
            detail="p95 wait at most 34 min"),
        Tip(kind="organisation", change="organisation.kubernetes_skills: medium -> low", new_choice="slurm"),
        Tip(kind="weight", change="criteria.both-groups.weight: 3.5 -> more than 5.10", new_choice="slurm",
            detail="Distinct user groups with both patterns"),
    ]  # fmt: skip
    _build(results, tips=tips)
    listed = section(markdown(results), "Recommendation").split("**What would tip the decision**", 1)[1]
    assert (
        "- A target of p95 wait at most 34 min (instead of 6.0 h) would make gpuplan recommend slurm."
        in listed
    )
    assert (
        "- Answering low on Kubernetes skills (instead of medium) would make gpuplan recommend slurm."
        in listed
    )
    assert (
        "- Weighing the criterion Distinct user groups with both patterns at more than 5.10 (instead of 3.5) "
        "would make gpuplan recommend slurm."
    ) in listed
    assert "-\\>" not in listed and "targets.p95" not in listed


# ---- cost ------------------------------------------------------------------------------------------


def _dollars(cell: str) -> float:
    return float(cell.replace("$", "").replace(",", ""))


def test_every_models_cost_rows_add_up_to_its_summary_cost(priced: Path) -> None:
    summary = _summary(priced)
    cost = section(markdown(priced), "Cost")
    for model, body in summary["models"].items():
        assert body["cost_usd"] is not None, model  # every pool has a price
        rows = [line.split(" | ") for line in cost.splitlines() if line.startswith(f"| {model} | ")]
        pools = [r for r in rows if not r[1].startswith("total")]
        assert {r[1] for r in pools} == set(body["cluster"]["pools"]), model
        # model, pool, GPUs, pricing, USD per GPU-hour, GPU-hours available, cost, idle cost, peak use
        assert all(r[3] == "on demand" and r[4] != "-" and r[6] != "-" for r in pools), (model, pools)
        parts = sum(_dollars(r[6]) for r in rows if not r[1].startswith("total"))
        # medians over the seeds: within the spread of the total; each seed's parts add up exactly
        low, high = (body["replications"]["spread"]["cost_usd"][k] for k in ("min", "max"))
        assert low - len(rows) <= parts <= high + len(rows), model  # rounding to the dollar
        for seed in summary["per_seed"].values():
            pools = seed[model]["cluster"]["pools"].values()
            assert sum(p["cost_usd"] for p in pools) == pytest.approx(seed[model]["cost_usd"])
    assert "| hybrid | gpu/kubernetes | 8 | on demand | 2.50 |" in cost


def test_pool_costs_are_the_summarys_per_pool_figures() -> None:
    body = {
        "cluster": {
            "pools": {
                "gpu/slurm": {"nodes": 1, "gpus_per_node": 4, "gpus": 4, "price_per_gpu_hour": 2.0,
                              "gpu_hours_available": 6.0, "cost_usd": 12.0},
                "gpu/kubernetes": {"nodes": 1, "gpus_per_node": 4, "gpus": 4, "price_per_gpu_hour": None,
                                   "gpu_hours_available": 8.0, "cost_usd": None},
            }
        },
    }  # fmt: skip
    priced, unpriced = pool_costs(body)
    assert (priced.pool, priced.price, priced.gpu_hours, priced.cost) == ("gpu/slurm", 2.0, 6.0, 12.0)
    assert (unpriced.price, unpriced.gpu_hours, unpriced.cost) == (None, 8.0, None)


# ---- the top of the report --------------------------------------------------------------------------


def _copy(results: Path, tmp_path: Path) -> Path:
    target = tmp_path / "results"
    shutil.copytree(results, target)
    return target


def _build(results: Path, **update: Any) -> Recommendation:
    """The reports of ``results`` with its recommendation's fields in ``update`` replaced."""
    summary = _summary(results)
    loaded = load_input(Path(summary["input"]["path"]))
    saved = read_recommendation(results / "recommendation.json")
    assert saved is not None
    recommendation = saved.model_copy(update=update)
    build_report(results, loaded=loaded, recommendation=recommendation)
    return recommendation


HEADLINE = re.compile(r'<p class="headline( warning)?"[^>]*>(.*?)</p>', re.S)


def test_headline_style_follows_the_decision(bundled: Path, tmp_path: Path) -> None:
    results = _copy(bundled, tmp_path)
    for decision in ("clear", "close_call", "tie"):
        _build(results, decision=decision, warnings=[])
        styled, text = HEADLINE.findall(page(results))[0]
        assert styled == "" and text.startswith("Recommended:"), decision
        assert "Warning" not in section(markdown(results), "Recommendation"), decision

    _build(results, decision="no_model_meets_targets")
    styled, text = HEADLINE.findall(page(results))[0]
    assert styled == " warning" and "No simulated model meets every target" in text
    assert "**Warning: No simulated model meets every target" in markdown(results)

    _build(results, decision="seed_dependent")
    styled, text = HEADLINE.findall(page(results))[0]
    assert styled == " warning" and "but the choice depends on the seed" in text
    assert "Decision: it depends on the seed" in markdown(results)

    # a clear choice with a warning to read first is not styled as settled either
    _build(results, decision="clear", warnings=["read me"])
    styled, _ = HEADLINE.findall(page(results))[0]
    assert styled == " warning" and "**Warning: Recommended:" in markdown(results)


def test_warnings_come_before_the_headline(bundled: Path, tmp_path: Path) -> None:
    results = _copy(bundled, tmp_path)
    warning = "hybrid leaves 28 jobs (448 GPU-hours) undone: nightly needs 2 nodes, Kubernetes has 1"
    _build(results, decision="clear", warnings=[warning])
    text, html = markdown(results), page(results)
    assert f"> **Warning:** {warning}" in text
    assert text.index("> **Warning:**") < text.index("**Warning: Recommended") < text.index("Decision:")
    alert = html.index('<div class="alert" role="alert"><span class="label">Warning:</span> hybrid leaves')
    assert alert < html.index('<p class="headline warning"')


def test_work_not_done_is_said_on_the_first_screen_and_detailed(bundled: Path, tmp_path: Path) -> None:
    results = _copy(bundled, tmp_path)
    summary = _summary(results)
    summary["models"]["hybrid"]["work_not_done"] = {
        "jobs": 30,
        "gpu_hours": 462.4,
        "rejected": {"jobs": 28, "gpu_hours": 448.0},
        "unfinished": {"jobs": 2, "gpu_hours": 14.4},
        "by_workload": {
            "nightly": {"jobs": 28, "gpu_hours": 448.0, "reasons": {"needs 2 nodes, the pool has 1": 28}},
            "research-training": {"jobs": 2, "gpu_hours": 14.4, "reasons": {"still queued at the end": 2}},
        },
    }
    (results / "summary.json").write_text(json.dumps(summary))
    _build(results)
    text = markdown(results)
    top = section(text, "Recommendation")
    sentence = (
        "Work not done: hybrid leaves 30 jobs (462 GPU-hours) undone (28 rejected, 2 still queued or "
        "running at the end); slurm and kubernetes do all the work."
    )
    assert sentence in top and top.index(sentence) < top.index("**Score per model**")
    assert "| hybrid | " in top.split("**Score per model**")[1]
    work = section(text, "Work not done")
    assert "| hybrid | 28 | 448 | 2 | 14 | 30 | 462 |" in work
    assert "**Work hybrid leaves undone**" in work
    assert "| nightly | 28 | 448 | needs 2 nodes, the pool has 1 (28 jobs) |" in work
    assert "| research-training | 2 | 14 | still queued at the end (2 jobs) |" in work
    assert text.index("## Work not done") < text.index("## Targets")


def test_work_not_done_of_a_real_run(bundled: Path) -> None:
    """Every model of the bundled example runs all its work (item 1's split holds the largest job)."""
    summary = _summary(bundled)
    work = section(markdown(bundled), "Work not done")
    for model, body in summary["models"].items():
        figures = body["work_not_done"]
        rejected, unfinished = figures["rejected"]["jobs"], figures["unfinished"]["jobs"]
        assert f"| {model} | {rejected} |" in work and f"| {unfinished} |" in work


def test_a_partial_result_says_which_models_are_missing(bundled: Path, tmp_path: Path) -> None:
    results = _copy(bundled, tmp_path)
    summary = _summary(results)
    del summary["models"]["kubernetes"]
    summary["partial"] = {"missing_models": ["kubernetes"], "why": "interrupted"}
    (results / "summary.json").write_text(json.dumps(summary))
    saved = read_recommendation(results / "recommendation.json")
    assert saved is not None
    _build(
        results,
        models=[m for m in saved.models if m.model != "kubernetes"],
        runner_up="slurm",
        decision="clear",
    )
    text, html = markdown(results), page(results)
    banner = (
        "> **Incomplete comparison:** kubernetes is missing: the run was interrupted before it finished, "
        "so this report compares only slurm and hybrid."
    )
    assert banner in text
    assert text.index(banner) < text.index("**Recommended") < text.index("## Work not done")
    assert html.index("Incomplete comparison:") < html.index('<p class="headline')


# ---- the header --------------------------------------------------------------------------------------


def test_header_names_the_bundled_example_not_its_install_path(bundled: Path) -> None:
    installed = str(bundled_example().parent)
    text, html = markdown(bundled), page(bundled)
    assert "· input: scenario mixed-org from the bundled example mixed-org.yaml" in text.splitlines()[2]
    header = html.split("</header>", 1)[0].split("<header>", 1)[1]
    assert "the bundled example mixed-org.yaml" in header and installed not in header
    assert installed not in text


def test_header_shows_a_users_own_file_as_given(priced: Path, traced: Path) -> None:
    given = _summary(priced)["input"]["path"]
    assert f"· input: scenario priced-rules from {given}" in markdown(priced)
    assert markdown(traced).splitlines()[0] == "# gpuplan report: lublin\\_256\\_first2000.swf.gz"
    assert f"· input: swf trace {str(TRACE).replace('_', chr(92) + '_')}" in markdown(traced)


# ---- charts ------------------------------------------------------------------------------------------


def test_utilisation_and_queue_have_one_panel_per_model_on_shared_axes(bundled: Path) -> None:
    html = page(bundled)
    models = list(_summary(bundled)["models"])
    for chart_id in ("chart-utilisation", "chart-queue"):
        drawn = figure(html, chart_id)
        layout = drawn["layout"]
        panels = ["x"] + [f"x{i}" for i in range(2, len(models) + 1)]
        assert [a["text"] for a in layout["annotations"]] == [f"<b>{m}</b>" for m in models]
        assert {trace["xaxis"] for trace in drawn["data"]} == set(panels)
        for i in range(2, len(models) + 1):
            assert layout[f"xaxis{i}"]["matches"] == "x" and layout[f"yaxis{i}"]["matches"] == "y"
        domains = [layout[f"yaxis{i if i > 1 else ''}"]["domain"] for i in range(1, len(models) + 1)]
        assert all(upper[0] > lower[1] for upper, lower in itertools.pairwise(domains))
        # smoothed: a few hours a point, not hundreds of jagged bins
        assert all(len(trace["x"]) <= CHART_BINS for trace in drawn["data"])


def test_wait_cdfs_share_one_x_range(bundled: Path) -> None:
    html = page(bundled)
    charts = [figure(html, f"chart-waits-{i}") for i in range(len(_summary(bundled)["models"]))]
    ranges = {tuple(c["layout"]["xaxis"]["range"]) for c in charts}
    assert len(ranges) == 1
    ((low, high),) = ranges
    longest = max(x for c in charts for trace in c["data"] for x in trace["x"])
    assert low == 0 and longest <= high <= longest * 1.05
