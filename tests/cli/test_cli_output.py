"""Issue 13, items 2 and 11: the commands print user text literally and say what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplan.cli.common import TRACE_FORMATS
from gpuplan.workload.readers import READERS

from builders import ROOT, gpuplan

EXAMPLES = ROOT / "examples"

# Text that Rich would read as markup or emoji codes if it were not printed literally.
HOSTILE = "[/x] [red]red[/red] :100: '^(*)?$' [bold]"

SCENARIO = """\
name: "{name}"
seed: 1
horizon: 1d
cluster:
  pools:
    - {{name: h100, shape: BM.GPU.H100.8, nodes: 2}}
    - {{name: a10, shape: BM.GPU.A10.4, nodes: 2}}
teams:
  - {{name: research}}
  - {{name: product, persona: app-developer}}
workloads:
  - name: "{name}"
    kind: batch
    team: research
    pool: h100
    arrival: {{rate: 6/day}}
    size: "1x8"
    duration: {{median: 1h}}
  - name: "{name} service"
    kind: service
    team: product
    pool: a10
    throughput_per_replica: 10
    replicas: {{min: 1, max: 4}}
    demand: {{peak: 30, trough: 5}}
"""


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.yaml"
    path.write_text(SCENARIO.format(name=HOSTILE.replace('"', "")))
    return path


def test_markup_in_a_scenario_is_printed_as_written(hostile: Path, tmp_path: Path) -> None:
    code, out, err = gpuplan("validate", str(hostile))
    assert code == 0 and HOSTILE in out, err
    code, out, err = gpuplan("compare", str(hostile), "--out", str(tmp_path / "c"), "--processes", "1")
    assert code == 0, err
    assert f"{HOSTILE} service: SLO attainment" in out
    code, out, err = gpuplan("recommend", str(hostile), "--out", str(tmp_path / "r"), "--processes", "1")
    assert code in (0, 1), err
    assert "💯" not in out + err


def test_markup_in_an_error_message_is_printed_as_written(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(SCENARIO.format(name="x").replace("team: research\n    pool", "team: '[/x]'\n    pool"))
    code, _, err = gpuplan("validate", str(path))
    assert code == 2 and "no team named '[/x]'" in err and "Traceback" not in err


def test_a_line_number_of_100_is_not_an_emoji(tmp_path: Path) -> None:
    # a CSV trace whose line 100 is malformed: the message names file:100: literally
    lines = ["job_id,user,gpu_num,submit_time,start_time,end_time,state"]
    lines += [f"{i},u{i % 3},1,{i * 60},{i * 60},{i * 60 + 600},COMPLETED" for i in range(1, 99)]
    lines.append("99,u0,one,5940,5940,6540,COMPLETED")
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(lines) + "\n")
    code, _, err = gpuplan("inspect", str(path), "--format", "helios", "--out", str(tmp_path / "o"))
    assert code == 2 and "trace.csv:100" in err and "💯" not in err


def test_format_help_lists_every_trace_format() -> None:
    assert set(TRACE_FORMATS) == set(READERS)
    code, out, _ = gpuplan("simulate", "--help")
    assert code == 0
    flat = " ".join(out.split())
    for name in READERS:
        assert name in flat


def test_backfill_with_the_kubernetes_model_is_an_error(tmp_path: Path) -> None:
    code, _, err = gpuplan(
        "simulate", str(EXAMPLES / "research-lab.yaml"), "--model", "kubernetes", "--backfill", "easy"
    )
    assert code == 2 and "--backfill" in err and "not kubernetes" in err


def test_recommend_on_a_trace_says_what_to_do_instead(tmp_path: Path) -> None:
    code, _, err = gpuplan("recommend", str(EXAMPLES / "lublin_256_first2000.swf.gz"), "--out", str(tmp_path))
    assert code == 2
    assert "workloads[].trace" in err and "gpuplan init" in err and "gpuplan simulate TRACE" in err


def test_simulate_prints_its_settings_as_lines_not_a_repr(tmp_path: Path) -> None:
    code, out, _ = gpuplan("simulate", str(EXAMPLES / "research-lab.yaml"), "--out", str(tmp_path))
    assert code == 0
    head = out.split("┏", 1)[0]
    assert "backfill easy, select_type cons_tres" in head and "{" not in head and "'" not in head


def test_report_exits_1_when_no_model_meets_the_targets(tmp_path: Path) -> None:
    path = tmp_path / "strict.yaml"
    path.write_text(SCENARIO.format(name="strict") + "targets:\n  p95_wait: 1s\n  gpu_utilization: 0.99\n")
    code, _, _ = gpuplan("simulate", str(path), "--out", str(tmp_path / "out"))
    assert code == 0
    code, out, _ = gpuplan("report", str(tmp_path / "out"))
    assert code == 1 and "no model meets targets" in out
    saved = json.loads((tmp_path / "out" / "recommendation.json").read_text())
    assert saved["decision"] == "no_model_meets_targets"


def test_progress_goes_to_stderr_line_by_line_off_a_terminal(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(name="s"))
    code, _, err = gpuplan("recommend", str(path), "--out", str(tmp_path / "o"), "--processes", "1")
    assert code in (0, 1)
    lines = err.splitlines()
    assert lines[0] == "simulating the models ..."
    # one line per model and seed: "slurm, seed 3 done (0.4 s)"
    assert {line.split(" done")[0].split(",")[0] for line in lines[1:] if " done (" in line} >= {
        "slurm",
        "kubernetes",
        "hybrid",
        "scoring",
        "report",
    }


def test_init_suggests_recommend(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text("name: lab\n")
    code, out, err = gpuplan("init", "--answers", str(answers), "--out", str(tmp_path / "lab.yaml"))
    assert code == 0, err
    assert f"Next: gpuplan recommend {tmp_path / 'lab.yaml'}" in " ".join(out.split())


def test_pods_on_nodes_of_unknown_cpu_and_memory_are_run_with_a_warning(tmp_path: Path) -> None:
    pods = tmp_path / "pods.csv"  # alone: no node list beside it
    pods.write_text((ROOT / "tests" / "data" / "k8s_alibaba_pod_list_sample.csv").read_text())
    code, out, err = gpuplan(
        "simulate", str(pods), "--model", "kubernetes", "--json", "--out", str(tmp_path / "o")
    )
    assert code == 0
    summary = json.loads(out)
    assert summary["jobs"]["completed"] == summary["jobs"]["submitted"] > 0
    assert f"CPU and memory requests of {summary['jobs']['submitted']} job(s) were not checked" in err


def test_a_trace_sized_beyond_any_machine_needs_nodes(tmp_path: Path) -> None:
    trace = tmp_path / "huge.swf"
    trace.write_text("1 0 0 3600 2000000 -1 -1 2000000 7200 -1 1 1 1 1 1 -1 -1 -1\n")
    code, _, err = gpuplan("simulate", str(trace), "--out", str(tmp_path / "o"))
    assert code == 2 and "huge.swf" in err and "more than any machine" in err and "--nodes" in err
    code, _, err = gpuplan("simulate", str(trace), "--nodes", "2000000", "--out", str(tmp_path / "o"))
    assert code == 2 and "--nodes" in err
