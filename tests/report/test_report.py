"""The reports: built from saved results of real simulations, one model or several; the same content in
HTML and Markdown; deterministic; user strings inert; bad or missing files named, exit code 2."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from gpuplan.cli import app
from gpuplan.report import rebuild
from gpuplan.results import manifest
from gpuplan.results.files import write_json
from gpuplan.simulate import SimulateRequest, simulate

from builders import ROOT

MIXED = ROOT / "examples" / "mixed-org.yaml"
runner = CliRunner()
SECTIONS = (
    "recommendation", "work", "targets", "workload", "models", "utilisation", "queue",
    "waits", "services", "cost", "criteria", "assumptions",
)  # fmt: skip


def simulated(scenario: Path, out: Path, backfill: str | None = None) -> Path:
    simulate(SimulateRequest(input=scenario, backfill=backfill, out=out))
    return out


def resealed(results: Path) -> Path:
    """The results' manifest rewritten for the files as they are now: a test that edits a result file
    by hand makes it one the run wrote (a file the manifest lists but that is gone stays listed)."""
    sealed = manifest.read(results)
    run = sealed.run if sealed is not None else manifest.Run("test", None, None, {}, [])
    names = set(sealed.files if sealed is not None else ()) | {
        path.name for path in results.iterdir() if path.is_file() and path.name != manifest.MANIFEST
    }
    files = {
        name: manifest.sha256(results / name) if (results / name).is_file() else "gone"
        for name in sorted(names)
    }
    write_json(results / manifest.MANIFEST, manifest.Manifest(run, files).to_json())
    return results


def merged(runs: dict[str, Path], out: Path) -> Path:
    """One results directory holding several runs as models (what compare will write), sealed with a
    manifest as a run's."""
    out.mkdir(parents=True)
    summaries = {name: json.loads((path / "summary.json").read_text()) for name, path in runs.items()}
    first = next(iter(summaries.values()))
    models = {name: summary["models"]["slurm"] for name, summary in summaries.items()}
    (out / "summary.json").write_text(json.dumps({**first, "models": models}, indent=2))
    for table in ("jobs", "timeline", "events"):
        parts = []
        for name, path in runs.items():
            part = pq.read_table(path / f"{table}.parquet")
            column = pa.array([name] * part.num_rows).dictionary_encode()
            parts.append(part.set_column(part.column_names.index("model"), "model", column))
        pq.write_table(pa.concat_tables(parts), out / f"{table}.parquet")
    return resealed(out)


@pytest.fixture(scope="module")
def mixed_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated(MIXED, tmp_path_factory.mktemp("mixed"))


@pytest.fixture(scope="module")
def two_models(tmp_path_factory: pytest.TempPathFactory, mixed_results: Path) -> Path:
    base = tmp_path_factory.mktemp("variants")
    fifo = simulated(MIXED, base / "fifo", backfill="none")
    return merged({"slurm-easy": mixed_results, "slurm-fifo": fifo}, base / "both")


def copy_of(results: Path, tmp_path: Path) -> Path:
    target = tmp_path / "results"
    shutil.copytree(results, target)
    for name in ("report.html", "report.md", "recommendation.json"):
        (target / name).unlink(missing_ok=True)
    return target


def test_report_command_builds_both_reports_and_the_recommendation(
    mixed_results: Path, tmp_path: Path
) -> None:
    results = copy_of(mixed_results, tmp_path)
    outcome = runner.invoke(app, ["report", str(results)])
    assert outcome.exit_code == 0, outcome.stderr
    assert "recommended: slurm" in outcome.stdout
    html = (results / "report.html").read_text()
    markdown = (results / "report.md").read_text()
    saved = json.loads((results / "recommendation.json").read_text())
    assert saved["chosen"] == "slurm" and saved["scenario"] == "mixed-org"
    for section in SECTIONS:
        assert f'<section id="{section}">' in html
    # offline: Plotly is inlined, nothing is fetched
    assert "<script src" not in html and "Plotly.newPlot" in html and len(html) > 3_000_000
    page_without_plotly = html.split("</script>", 1)[1]  # Plotly's own code names its web site
    assert not re.search(r"""(src|href)=["']https?:""", page_without_plotly)
    # the recommendation and reasons come first
    assert html.index('id="recommendation"') < html.index('id="workload"') < html.index('id="criteria"')
    assert markdown.index("## Recommendation") < markdown.index("## Workload characterisation")
    assert "Simulated: slurm" in markdown  # one model only: simulated, not yet recommended


def test_markdown_carries_the_same_tables(mixed_results: Path, tmp_path: Path) -> None:
    results = copy_of(mixed_results, tmp_path)
    rebuild(results)
    html = (results / "report.html").read_text()
    markdown = (results / "report.md").read_text()
    table_titles = re.findall(r"<h3>(.*?)</h3>", html)
    assert len(table_titles) >= 10
    for title in table_titles:
        assert f"**{title}**" in markdown
    headers = re.findall(r"<thead><tr>(.*?)</tr></thead>", html)
    assert len(headers) == len(re.findall(r"^\| .* \|\n\|( --- \|)+$", markdown, flags=re.M))
    criteria_rows = html.split('id="criteria"')[1].split("</table>")[0].count("<tr>") - 1
    assert criteria_rows == len(
        json.loads((results / "recommendation.json").read_text())["models"][0]["criteria"]
    )


def test_reports_are_deterministic(mixed_results: Path, tmp_path: Path) -> None:
    first = copy_of(mixed_results, tmp_path / "a")
    second = copy_of(mixed_results, tmp_path / "b")
    rebuild(first)
    rebuild(second)
    for name in ("report.html", "report.md", "recommendation.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_several_models_side_by_side(two_models: Path, tmp_path: Path) -> None:
    results = copy_of(two_models, tmp_path)
    result = rebuild(results)
    assert set(result.recommendation.scores) == {"slurm-easy", "slurm-fifo"}
    html = (results / "report.html").read_text()
    markdown = (results / "report.md").read_text()
    assert "| figure | slurm-easy | slurm-fifo |" in markdown
    assert 'id="chart-waits-0"' in html and 'id="chart-waits-1"' in html
    for model in ("slurm-easy", "slurm-fifo"):
        assert f"| {model} | h100 |" in markdown  # utilisation per model and pool
        assert f"| {model} | research |" in markdown  # waits per team


def test_an_existing_recommendation_is_used_as_saved(mixed_results: Path, tmp_path: Path) -> None:
    results = copy_of(mixed_results, tmp_path)
    rebuild(results)
    saved = json.loads((results / "recommendation.json").read_text())
    saved["reasons"] = ["a reason written by an earlier run"]
    (results / "recommendation.json").write_text(json.dumps(saved))
    result = rebuild(resealed(results))
    assert not result.computed
    assert "a reason written by an earlier run" in (results / "report.md").read_text()


def test_scenario_not_found_is_a_warning_and_scenario_option_supplies_it(
    mixed_results: Path, tmp_path: Path
) -> None:
    results = copy_of(mixed_results, tmp_path)
    summary = json.loads((results / "summary.json").read_text())
    summary["input"]["path"] = "moved/away.yaml"
    (results / "summary.json").write_text(json.dumps(summary))
    resealed(results)
    outcome = runner.invoke(app, ["report", str(results)])
    assert outcome.exit_code == 0
    assert "moved/away.yaml" in outcome.stderr and "--scenario" in outcome.stderr
    assert "Unavailable: the scenario" in (results / "report.md").read_text()

    (results / "recommendation.json").unlink()
    outcome = runner.invoke(
        app, ["report", str(results), "--scenario", str(MIXED), "--out", str(tmp_path / "o")]
    )
    assert outcome.exit_code == 0, outcome.stderr
    markdown = (tmp_path / "o" / "report.md").read_text()
    assert "| share of GPU-hours in services |" in markdown and "**Pools**" in markdown


def test_user_strings_are_escaped(tmp_path: Path) -> None:
    scenario = ROOT / "tests" / "data" / "report_script_names.yaml"
    results = simulated(scenario, tmp_path / "results")
    rebuild(results)
    html = (results / "report.html").read_text()
    markdown = (results / "report.md").read_text()
    assert "<script>alert" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#34;name&#34;)&lt;/script&gt;" in html  # shown, not run
    # in chart JSON: HTML-escaped for Plotly's labels, then "&" as \u0026 for the <script> element
    assert "\\u0026lt;img src=x onerror=alert(1)\\u0026gt;" in html
    assert "<script>" not in markdown and "\\<script\\>" in markdown


@pytest.mark.parametrize(
    ("breakage", "file", "message"),
    [
        (lambda d: (d / "summary.json").unlink(), "summary.json", "missing"),
        (lambda d: (d / "summary.json").write_text("{not json"), "summary.json", "not valid JSON"),
        (lambda d: (d / "summary.json").write_text('{"models": {}}'), "summary.json", "'models'"),
        (lambda d: (d / "jobs.parquet").unlink(), "jobs.parquet", "missing"),
        (lambda d: (d / "timeline.parquet").write_bytes(b"PAR1 junk"), "timeline.parquet", "not a readable"),
        (lambda d: (d / "recommendation.json").write_text("{}"), "recommendation.json", "not a recommenda"),
    ],
    ids=["no summary", "summary not JSON", "summary without models", "no jobs table", "broken timeline",
         "foreign recommendation"],
)  # fmt: skip
def test_bad_or_missing_files_are_named_with_exit_code_2(
    mixed_results: Path, tmp_path: Path, breakage: object, file: str, message: str
) -> None:
    results = copy_of(mixed_results, tmp_path)
    breakage(results)  # type: ignore[operator]
    resealed(results)  # the run wrote the broken file: what the reader makes of it is the point
    outcome = runner.invoke(app, ["report", str(results)])
    assert outcome.exit_code == 2
    assert file in outcome.stderr and message in outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit)


def test_not_a_directory(tmp_path: Path) -> None:
    outcome = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert outcome.exit_code == 2 and "not a results directory" in outcome.stderr


def test_the_interface_recommend_will_call(tmp_path: Path) -> None:
    """recommend: simulate (compare later), advise on the loaded input, write the recommendation, build."""
    from gpuplan.advisor import advise, write_recommendation
    from gpuplan.inputs import load_input
    from gpuplan.report import build_report

    out = simulated(MIXED, tmp_path / "out")
    loaded = load_input(MIXED)
    recommendation = advise(json.loads((out / "summary.json").read_text()), loaded)
    write_recommendation(out, recommendation)
    result = build_report(out, loaded=loaded, recommendation=recommendation)
    assert [path.name for path in result.files] == ["report.html", "report.md"]
    assert not result.computed and result.recommendation == recommendation
    assert "| share of GPU-hours in services | 13.0% |" in (out / "report.md").read_text()


def test_a_trace_is_read_back_as_it_was_simulated(tmp_path: Path) -> None:
    trace = ROOT / "examples" / "lublin_256_first2000.swf.gz"
    out = tmp_path / "swf"
    simulate(SimulateRequest(input=trace, backfill="easy", out=out))
    result = rebuild(out)
    assert result.warnings == []
    markdown = (out / "report.md").read_text()
    assert "| jobs / services | 2,000 / 0 |" in markdown
    assert "The input is a swf trace" in markdown
    assert result.recommendation.evidence["organisation"] == {}


def test_an_organisations_own_criteria_file(mixed_results: Path, tmp_path: Path) -> None:
    from importlib import resources

    import yaml

    criteria = yaml.safe_load(resources.files("gpuplan.advisor").joinpath("criteria.yaml").read_text())
    next(c for c in criteria["criteria"] if c["id"] == "existing-hpc-workflows")["weight"] = 4.0
    path = tmp_path / "our-criteria.yaml"
    path.write_text(yaml.safe_dump(criteria))
    results = copy_of(mixed_results, tmp_path)
    assert runner.invoke(app, ["report", str(results), "--criteria", str(path)]).exit_code == 0
    saved = json.loads((results / "recommendation.json").read_text())
    row = next(r for r in saved["models"][0]["criteria"] if r["id"] == "existing-hpc-workflows")
    assert (row["weight"], row["contribution"]) == (4.0, 4.0)  # existing_slurm_scripts: high -> strength 1

    criteria["criteria"][0]["dimension"] = "astrology"
    path.write_text(yaml.safe_dump(criteria))
    (results / "recommendation.json").unlink()
    outcome = runner.invoke(app, ["report", str(results), "--criteria", str(path)])
    assert outcome.exit_code == 2 and "our-criteria.yaml" in outcome.stderr and "astrology" in outcome.stderr


@pytest.mark.parametrize(
    ("times", "values", "edges", "expected"),
    [
        ([0, 10], [0, 4], [0, 5, 10, 15, 20], [0, 0, 4, 4]),
        ([0, 10], [2, 6], [0, 15, 30], [(2 * 10 + 6 * 5) / 15, 6]),
        ([5, 10], [3, 1], [0, 10, 20], [(3 * 5) / 10, 1]),
        ([10, 0], [4, 0], [0, 5, 10, 15, 20], [0, 0, 4, 4]),
    ],
    ids=["a step at a bin edge", "a step inside a bin", "nothing before the first row", "rows out of order"],
)
def test_timeline_bins_are_time_weighted_means_of_the_step_function(
    times: list[float], values: list[float], edges: list[float], expected: list[float]
) -> None:
    import numpy as np

    from gpuplan.report.series import _binned_means

    got = _binned_means(np.array(times, float), np.array(values, float), np.array(edges, float))
    assert got.tolist() == pytest.approx(expected)


def test_wait_cdfs_per_model_and_team() -> None:
    import numpy as np

    from gpuplan.report.results import Columns
    from gpuplan.report.series import wait_cdfs

    jobs = Columns(
        {
            "model": np.array(["m", "m", "m", "m", "n"], dtype=object),
            "team": np.array(["a", "a", "a", "b", "a"], dtype=object),
            "submit_s": np.array([0.0, 0.0, 0.0, 0.0, 0.0]),
            "start_s": np.array([0.0, 1800.0, 7200.0, np.nan, 60.0]),  # team b's job never started
        }
    )
    cdfs = {(c.model, c.team): c for c in wait_cdfs(jobs)}
    assert set(cdfs) == {("m", "a"), ("n", "a")}
    team_a = cdfs["m", "a"]
    assert team_a.jobs == 3 and team_a.within_hour == pytest.approx(2 / 3)
    assert team_a.wait_s[0] == 0 and team_a.wait_s[-1] == 7200 and team_a.wait_s[50] == 1800
