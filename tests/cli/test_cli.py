"""The CLI end to end on the bundled example: exit codes, --json, result files, reruns."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from builders import EXAMPLES, gpuplan

EXAMPLE = EXAMPLES / "lublin_256_first2000.swf.gz"


@pytest.mark.parametrize("backfill", ["none", "easy"])
def test_json_prints_the_model_summary(tmp_path: Path, backfill: str) -> None:
    code, out, _ = gpuplan(
        "simulate",
        str(EXAMPLE),
        "--model",
        "slurm",
        "--backfill",
        backfill,
        "--json",
        "--out",
        str(tmp_path),
        columns=None,
    )
    assert code == 0
    summary = json.loads(out)
    assert summary["model"] == "slurm"
    assert summary["settings"] == {"backfill": backfill, "select_type": "cons_tres"}
    assert summary["jobs"]["submitted"] == 2000
    assert summary["jobs"]["completed"] + summary["jobs"]["rejected"] == 2000
    assert set(summary["wait_s"]) == {"mean", "p50", "p95", "p99", "max"}
    assert set(summary["timing_s"]) == {"read", "simulate", "write"}
    assert 0 < summary["gpu_utilization"] <= 1
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["models"]["slurm"]["wait_s"] == summary["wait_s"]
    jobs = pq.read_table(tmp_path / "jobs.parquet")
    assert jobs.column_names == [
        "model",
        "job_id",
        "name",
        "team",
        "submit_s",
        "start_s",
        "end_s",
        "state",
        "nodes",
        "gpus",
        "cpus",
        "mem_mb",
        "pool",
        "node_list",
        "preemptions",
        "lost_gpu_s",
        "reason",
    ]
    assert jobs.num_rows == 2000
    timeline = pq.read_table(tmp_path / "timeline.parquet")
    assert timeline.column_names == [
        "model",
        "pool",
        "time_s",
        "busy_gpus",
        "queued_jobs",
        "nodes_up",
        "busy_cpus",
        "busy_mem_mb",
    ]


def test_easy_waits_less_than_fifo_on_the_example(tmp_path: Path) -> None:
    waits = {}
    for backfill in ("none", "easy"):
        code, out, _ = gpuplan(
            "simulate",
            str(EXAMPLE),
            "--backfill",
            backfill,
            "--json",
            "--out",
            str(tmp_path / backfill),
            columns=None,
        )
        assert code == 0
        waits[backfill] = json.loads(out)["wait_s"]["mean"]
    assert waits["easy"] < waits["none"]


def test_reruns_are_bit_identical(tmp_path: Path) -> None:
    for run in ("first", "second"):
        assert (
            gpuplan("simulate", str(EXAMPLE), "--out", str(tmp_path / run), "--quiet", columns=None)[0] == 0
        )
    for name in ("jobs.parquet", "timeline.parquet", "events.parquet"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()
    first, second = (json.loads((tmp_path / run / "summary.json").read_text()) for run in ("first", "second"))
    for summary in (first, second):
        del summary["models"]["slurm"]["timing_s"]
    assert first == second


def test_a_smaller_cluster_rejects_larger_jobs_with_a_warning(tmp_path: Path) -> None:
    code, out, err = gpuplan(
        "simulate", str(EXAMPLE), "--nodes", "64", "--json", "--out", str(tmp_path), columns=None
    )
    assert code == 0
    rejected = json.loads(out)["jobs"]["rejected"]
    assert rejected > 0
    assert f"slurm leaves {rejected} job(s)" in err
    assert f"{rejected} rejected (they can never run on its cluster)" in err
    assert f"NodeConfigNotAvailable: {rejected}" in err
    assert "first rejected: job" in err and f"{EXAMPLE}:" in err
    assert "first rejected: job 4 (128x1) at " in err and "lublin_256_first2000.swf.gz:11" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.swf"], "missing.swf: no such file"),
        (["trace.csv"], "cannot tell the trace format from the file name"),
        (["bad.swf"], "bad.swf:2: field 4 (run time): expected a number, got 'x'"),
    ],
    ids=["a missing file", "an unknown format", "a malformed line"],
)
def test_bad_input_exits_2_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trace.csv").write_text("a,b\n")
    (tmp_path / "bad.swf").write_text("1 0 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n2 0 -1 x 1\n")
    code, _, err = gpuplan("simulate", *args, columns=None)
    assert code == 2
    assert message in " ".join(err.split())
    assert "Traceback" not in err


def test_an_unknown_backfill_mode_is_refused() -> None:
    code, _, err = gpuplan("simulate", str(EXAMPLE), "--backfill", "conservative", columns=None)
    assert code == 2
    assert "conservative" in err


def test_slurm_backfill_takes_its_settings_from_the_scenario(tmp_path: Path) -> None:
    scenario = EXAMPLES / "research-lab.yaml"
    text = scenario.read_text().replace("    backfill: easy ", "    bf_interval: 60\n    backfill: slurm ")
    path = tmp_path / "research-lab.yaml"
    path.write_text(text)
    code, out, _ = gpuplan("simulate", str(path), "--json", "--out", str(tmp_path / "out"), columns=None)
    assert code == 0
    settings = json.loads(out)["settings"]
    backfill = {
        "backfill": "slurm",
        "bf_interval": 60,
        "bf_window": 1440,
        "bf_resolution": 60,
        "bf_max_job_test": 500,
    }
    assert backfill.items() <= settings.items()
    assert settings["priority_type"] == "multifactor" and settings["weight_fairshare"] == 10000
    code, out, _ = gpuplan(
        "simulate", str(path), "--backfill", "easy", "--json", "--out", str(tmp_path / "out"), columns=None
    )
    assert json.loads(out)["settings"]["backfill"] == "easy"


def test_slurm_backfill_from_the_cli_on_a_trace(tmp_path: Path) -> None:
    results = {}
    for backfill in ("none", "easy", "slurm"):
        code, out, _ = gpuplan(
            "simulate",
            str(EXAMPLE),
            "--backfill",
            backfill,
            "--json",
            "--out",
            str(tmp_path / backfill),
            columns=None,
        )
        assert code == 0
        results[backfill] = json.loads(out)
    assert results["slurm"]["settings"]["bf_interval"] == 30
    # reservations for every job cost some waiting against EASY, but backfilling beats strict FIFO
    assert results["slurm"]["wait_s"]["mean"] < results["none"]["wait_s"]["mean"]
    assert results["slurm"]["jobs"]["completed"] == results["easy"]["jobs"]["completed"]


@pytest.mark.parametrize("model", ["slurm", "hybrid"])
def test_events_parquet_tells_each_jobs_story(tmp_path: Path, model: str) -> None:
    # Slurm's log is the one its outcome implies: each job Submitted, then Started and Ended (with
    # its state) or Rejected (with the reason jobs.parquet gives); hybrid joins both sides' logs
    scenario = EXAMPLES / "mixed-org.yaml"
    assert gpuplan("simulate", str(scenario), "--model", model, "--out", str(tmp_path), "-q")[0] == 0
    jobs = pq.read_table(tmp_path / "jobs.parquet").to_pylist()
    events = pq.read_table(tmp_path / "events.parquet").to_pylist()
    assert [e["time_s"] for e in events] == sorted(e["time_s"] for e in events)
    by_job: dict[int, list[dict[str, object]]] = {}
    for event in events:
        by_job.setdefault(int(event["job_id"]), []).append(event)  # type: ignore[arg-type]
    assert set(by_job) == {job["job_id"] for job in jobs}
    for job in jobs:
        story = by_job[job["job_id"]]
        assert story[0]["event"] in ("Submitted", "Created") and story[0]["time_s"] == job["submit_s"]
        if job["state"] == "rejected":
            assert story[-1]["event"] == "Rejected" and story[-1]["reason"] == job["reason"]
        if job["state"] == "completed":
            last = story[-1]
            assert last["event"] in ("Ended", "Finished") and last["time_s"] == job["end_s"]
            started = next(e for e in story if e["event"] in ("Started", "PodsReady"))
            assert started["time_s"] == job["start_s"]
    if model == "hybrid":
        assert {"Submitted", "Created"} <= {e["event"] for e in events}
