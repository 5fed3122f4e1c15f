"""Workload synthesis: determinism per seed, and draws that match the distributions asked for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpuplan.scenario.load import LoadedScenario, load_scenario
from gpuplan.workload.synthesis import Workload, synthesize

from builders import DATA, ROOT

LONG = """\
name: long
seed: {seed}
horizon: 364d
cluster:
  pools:
    - {{name: gpu, gpus_per_node: 8, nodes: 64}}
teams:
  - {{name: alpha, users: 3}}
  - {{name: beta}}
workloads:
  - name: steady
    kind: batch
    team: alpha
    arrival: {{rate: 40/day}}
    size: {{"1x1": 60, "1x8": 30, "4x8": 10}}
    duration: {{median: 3h, sigma: 1.2}}
    time_limit: {{over_request: 3, sigma: 0.4}}
  - name: office-hours
    kind: interactive
    team: beta
    arrival:
      rate: 24/day
      diurnal: {{peak_hour: 14, peak_to_trough: 5}}
      weekly: {{weekend_factor: 0.25}}
      bursts: [{{start: 100d, duration: 10d, factor: 3}}]
    size: "1x1"
    duration: {{median: 1h, sigma: 0.5, max: 4h}}
  - name: api
    kind: service
    team: beta
    throughput_per_replica: 10
    replicas: {{min: 2, max: 8}}
    demand: {{peak: 70, trough: 10, peak_hour: 15, weekly: {{weekend_factor: 0.5}}}}
"""


def scenario(tmp_path: Path, seed: int = 5, text: str = LONG) -> LoadedScenario:
    path = tmp_path / f"long-{seed}.yaml"
    path.write_text(text.format(seed=seed))
    return load_scenario(path)


@pytest.fixture(scope="module")
def long_workload(tmp_path_factory: pytest.TempPathFactory) -> Workload:
    return synthesize(scenario(tmp_path_factory.mktemp("long")))


def of(workload: Workload, name: str) -> np.ndarray:
    assert workload.jobs.workload is not None
    code = workload.jobs.workload.labels.index(name)
    return np.flatnonzero(workload.jobs.workload.codes == code)


def parquet_bytes(workload: Workload) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(workload.jobs.to_arrow(), sink)
    return bytes(sink.getvalue())


def test_the_same_seed_gives_the_same_jobs(tmp_path: Path) -> None:
    first, second = synthesize(scenario(tmp_path)), synthesize(scenario(tmp_path))
    assert parquet_bytes(first) == parquet_bytes(second)
    assert np.array_equal(first.services[0].demand_rps, second.services[0].demand_rps)
    other = synthesize(scenario(tmp_path, seed=6))
    assert not np.array_equal(first.jobs.submit_s[:100], other.jobs.submit_s[:100])


def test_editing_one_workload_leaves_the_others_alone(tmp_path: Path) -> None:
    base = synthesize(scenario(tmp_path))
    edited = synthesize(scenario(tmp_path, text=LONG.replace("rate: 24/day", "rate: 30/day")))
    steady_base, steady_edited = of(base, "steady"), of(edited, "steady")
    assert np.array_equal(base.jobs.submit_s[steady_base], edited.jobs.submit_s[steady_edited])
    assert np.array_equal(base.jobs.duration_s[steady_base], edited.jobs.duration_s[steady_edited])


def test_jobs_are_numbered_in_submit_order(long_workload: Workload) -> None:
    jobs = long_workload.jobs
    assert jobs.job_id.tolist() == list(range(1, len(jobs) + 1))
    assert (np.diff(jobs.submit_s) >= 0).all()


def test_arrival_rate_duration_and_sizes_match_the_scenario(long_workload: Workload) -> None:
    jobs = long_workload.jobs
    steady = of(long_workload, "steady")
    # 40/day over 364 days: 14,560 expected, Poisson sd ~ 121
    assert abs(len(steady) - 14_560) < 5 * 121
    assert np.median(jobs.duration_s[steady]) == pytest.approx(3 * 3600, rel=0.05)
    gpus = jobs.gpus[steady]
    shares = [np.mean(gpus == g) for g in (1, 8, 32)]
    assert shares == pytest.approx([0.6, 0.3, 0.1], abs=0.02)
    ratio = jobs.time_limit_s[steady] / jobs.duration_s[steady]
    assert np.median(ratio) == pytest.approx(3.0, rel=0.1)  # limits are rounded up to whole minutes


def test_daily_weekly_and_burst_profiles(long_workload: Workload) -> None:
    submit = long_workload.jobs.submit_s[of(long_workload, "office-hours")]
    outside = (submit < 100 * 86400) | (submit >= 110 * 86400)
    hour = (submit[outside] % 86400) // 3600
    by_hour = np.bincount(hour.astype(int), minlength=24)
    assert by_hour.argmax() in (13, 14, 15)
    assert by_hour[14] / by_hour[2] == pytest.approx(5.0, rel=0.25)  # peak-to-trough
    day = (submit[outside] // 86400) % 7  # the scenario starts on a Monday
    per_day = np.bincount(day.astype(int), minlength=7)
    assert per_day[5:].mean() / per_day[:5].mean() == pytest.approx(0.25, rel=0.15)
    # overall mean 24/day, and 3x that during the burst
    assert outside.sum() / 354 == pytest.approx(24, rel=0.05)
    in_burst = ((submit >= 100 * 86400) & (submit < 110 * 86400)).sum()
    weekly_mean = 1.0  # the burst spans whole weeks' worth of days closely enough
    assert in_burst / 10 == pytest.approx(3 * 24 * weekly_mean, rel=0.15)


def test_service_demand_follows_its_curve(long_workload: Workload) -> None:
    (service,) = long_workload.services
    demand = service.demand_rps
    assert len(demand) == 364 * 288  # 5-minute steps
    weekdays = demand[: 5 * 288]
    assert weekdays.max() == pytest.approx(70, rel=0.01) and weekdays.min() == pytest.approx(10, rel=0.01)
    assert demand[5 * 288 : 7 * 288].max() == pytest.approx(35, rel=0.01)  # weekend factor 0.5
    replicas = service.replicas_needed()
    assert replicas.min() == 2 and replicas.max() == 7  # ceil(70 / 10), within [2, 8]


def test_a_trace_workload_replays_a_window_at_a_scaled_rate(tmp_path: Path) -> None:
    example = ROOT / "examples" / "lublin_256_first2000.swf.gz"
    text = f"""
name: replay
cluster:
  pools: [{{name: big, gpus_per_node: 1, nodes: 256}}]
teams: [{{name: research}}]
workloads:
  - name: lublin
    trace: {{path: {example}, team: research, window: {{start: 1d, end: 3d}}, load_scale: 2}}
"""
    path = tmp_path / "replay.yaml"
    path.write_text(text)
    jobs = synthesize(load_scenario(path)).jobs
    from gpuplan.workload.swf import read_swf

    original = read_swf(example).jobs.submit_s
    original = original - original.min()
    expected = ((original >= 86400) & (original < 3 * 86400)).sum()
    assert len(jobs) == expected
    assert jobs.submit_s.max() < 86400  # two days of arrivals, twice as fast
    assert jobs.team.values()[0] == "research"


def test_demand_from_a_csv_and_run_times_from_a_trace(tmp_path: Path) -> None:
    (tmp_path / "demand.csv").write_text("time_s,requests_per_s\n0,10\n43200,50\n")  # a day: 10, 50, repeat
    example = ROOT / "examples" / "lublin_256_first2000.swf.gz"
    text = f"""
name: csv-and-trace
horizon: 2d
cluster:
  pools: [{{name: gpu, gpus_per_node: 8, nodes: 4}}]
teams: [{{name: ops}}]
workloads:
  - name: api
    kind: service
    team: ops
    throughput_per_replica: 10
    replicas: {{min: 1, max: 5}}
    demand: {{csv: demand.csv}}
  - name: replayed-durations
    kind: batch
    team: ops
    arrival: {{rate: 200/day}}
    size: "1x1"
    duration: {{trace: {example}, scale: 0.5}}
"""
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    workload = synthesize(load_scenario(path))
    demand = workload.services[0].demand_rps
    assert demand[0] == 10 and demand[144] == 50 and demand[288] == 10  # interpolated, repeated daily
    assert demand[72] == pytest.approx(30)
    from gpuplan.workload.swf import read_swf

    source = read_swf(example).jobs.duration_s
    allowed = set(np.round(source[source > 0] * 0.5).tolist())
    assert set(workload.jobs.duration_s.tolist()) <= allowed
    assert len(workload.jobs) == pytest.approx(400, rel=0.2)


def test_a_traced_partition_the_scenario_defines_is_kept(tmp_path: Path) -> None:
    trace = DATA / "sacct_gpusim_22.05_slice.txt"
    text = f"""\
name: replay
cluster:
  pools: [{{name: gpu, gpus_per_node: 8, nodes: 8}}]
teams: [{{name: a}}]
workloads:
  - name: replay
    trace: {{path: {trace}, team: a}}
models:
  slurm:
    partitions:
      - {{name: batch, pool: gpu}}
"""
    path = tmp_path / "replay.yaml"
    path.write_text(text)
    jobs = synthesize(load_scenario(path)).jobs
    labels = set(jobs.partition.values())
    assert "batch" in labels  # defined: kept
    assert labels <= {"batch", "gpu"}  # any other traced partition falls back to the pool
