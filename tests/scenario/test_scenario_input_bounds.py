"""Hostile and mistaken scenario files (issue 13, items 6-9): the YAML loader's bounds (aliases, size,
nesting, duplicate keys, tags), units on rates and durations, the volume warnings, trace formats and
nonsense numbers. Each is exit 2 from ``gpuplan validate`` naming file, line and field, or a warning."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpuplan.cli import app
from gpuplan.errors import InputError
from gpuplan.scenario.load import MAX_JOBS, WARN_JOBS, load_scenario
from gpuplan.scenario.model import Scenario
from gpuplan.scenario.source import MAX_BYTES, MAX_DEPTH, MAX_VALUES, load_yaml
from gpuplan.scenario.units import DURATION_PATTERN, RATE_PATTERN

from builders import DATA, EXAMPLES, SMALL_SCENARIO

runner = CliRunner()

DURATION = "    duration: {median: 2h, sigma: 0.5}\n"
BASE = SMALL_SCENARIO.replace(
    DURATION, DURATION + "    time_limit: {over_request: 2, round_to: 1h, max: 1d}\n"
)


def line_of(text: str, fragment: str) -> int:
    """The 1-based line of the first occurrence of ``fragment`` in ``text``."""
    assert fragment in text, fragment
    return text[: text.index(fragment)].count("\n") + 1


def validate(path: Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["validate", str(path)])
    # Rich may wrap long lines: compare with whitespace collapsed
    return result.exit_code, " ".join(result.stdout.split()), " ".join(result.stderr.split())


def write(tmp_path: Path, text: str, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_refused(tmp_path: Path, text: str, line: int, field: str, words: str) -> None:
    path = write(tmp_path, text)
    code, _, stderr = validate(path)
    assert code == 2, stderr
    assert f"{path}:{line}: {field}: " in stderr, stderr
    assert words in stderr, stderr
    assert "Traceback" not in stderr


# ---- item 6: the YAML loader ------------------------------------------------------------------

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
"""


def test_an_alias_bomb_is_refused_fast_at_the_line_of_the_alias(tmp_path: Path) -> None:
    path = write(tmp_path, BILLION_LAUGHS)
    started = time.perf_counter()
    code, _, stderr = validate(path)
    assert time.perf_counter() - started < 5  # it took 20 s and 2.4 GB before the bound
    assert code == 2
    # 9^5 = 59,049 values at line 5, 9^6 at line 6: the bound of 100,000 is passed on line 6
    assert f"{path}:6: more than {MAX_VALUES:,} values once aliases are expanded" in stderr, stderr


def test_aliases_and_merge_keys_within_the_bound_still_work(tmp_path: Path) -> None:
    text = BASE.replace(
        "  - name: training\n    kind: batch\n",
        "  - &common\n    name: training\n    kind: batch\n",
    ) + (
        "  - <<: *common\n"
        "    name: training-2\n"
        "    arrival: {rate: 2/day}\n"
    )  # fmt: skip
    loaded = load_scenario(write(tmp_path, text))
    second = loaded.scenario.workloads[2]
    assert second.name == "training-2" and second.team == "alpha"  # type: ignore[union-attr]
    assert second.arrival.rate == pytest.approx(2 / 86400)  # type: ignore[union-attr]


def test_an_error_in_a_merged_key_names_the_line_it_is_written_on(tmp_path: Path) -> None:
    text = BASE.replace("    kind: batch\n    team: alpha\n", "    kind: batch\n    team: &who alfa\n")
    text += "  - <<: {team: *who, kind: batch, size: '1x8', duration: {median: 1h}}\n"
    text += "    name: again\n    arrival: {rate: 1/day}\n"
    with pytest.raises(InputError) as caught:
        load_scenario(write(tmp_path, text))
    assert caught.value.line == line_of(text, "team: &who alfa")


def test_the_document_size_is_bounded_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("w") as file:
        file.write(BASE)
        file.write("# padding\n" * (4 * MAX_BYTES // 10))  # 4 times the bound
    started = time.perf_counter()
    code, _, stderr = validate(path)
    assert time.perf_counter() - started < 5
    assert code == 2
    line = (MAX_BYTES - len(BASE)) // len("# padding\n") + BASE.count("\n") + 1
    assert f"{path}:{line}: the file is larger than {MAX_BYTES:,} bytes" in stderr, stderr


def test_a_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    text = BASE.replace("    share: 2\n", "    share: 2\n    share: 3\n")
    first, second = line_of(text, "share: 2"), line_of(text, "share: 3")
    path = write(tmp_path, text)
    code, _, stderr = validate(path)
    assert code == 2
    assert f"{path}:{second}: duplicate key 'share' (first at line {first}, again at line {second})" in stderr


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("a: &x 1\nb: &x 2\n", 2, "anchor &x is defined twice (lines 1 and 2)"),
        ("a: &x [1, *x]\n", 1, "alias *x is inside the value it refers to"),
        ("a: 1\nb: !!python/object:os.system ls\n", 2, "tag 'tag:yaml.org,2002:python/object:os.system'"),
        ("a: !custom 1\n", 1, "YAML tag '!custom'"),
        ("a:\n  b: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n", 2, "nested more than"),
        ("a: 1\nb: 2026-13-45\n", 2, "cannot read the value '2026-13-45'"),
        ("a: 0x" + "f" * 5000 + "\n", 1, "an integer of more than 64 bits"),
        ("%YAML 1.1\n---\na: 1\n", 2, "YAML 1.1 is not read"),
        ("a: [1\n", 2, "YAML syntax"),
    ],
    ids=["anchor twice", "recursive alias", "python tag", "custom tag", "deep nesting", "bad date",
         "huge hex integer", "YAML 1.1", "syntax"],
)  # fmt: skip
def test_the_loader_refuses_what_it_cannot_read_safely(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_yaml(write(tmp_path, text))
    assert caught.value.line == line and words in caught.value.message, str(caught.value)


def test_json_is_read_as_yaml_1_2(tmp_path: Path) -> None:
    # YAML 1.2: "no" and "on" are strings (PyYAML's YAML 1.1 made them booleans), 1e3 is a number
    located = load_yaml(write(tmp_path, '{"a": no, "b": on, "c": 1e3, "d": [1, 2.5, null, true]}'))
    assert located.data == {"a": "no", "b": "on", "c": 1000.0, "d": [1, 2.5, None, True]}
    # plain Python types, not ruamel's ScalarFloat and friends
    assert [type(value) for value in located.data["d"]] == [int, float, type(None), bool]


# ---- item 7: units -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("rate: 10/day", "rate: 7", "workloads[0].arrival.rate",
         "a rate needs a unit: '7/h', '7/day' or '7/s'"),
        ("median: 2h", "median: 30", "workloads[0].duration.median",
         "a duration needs a unit: '30s', '30m', '30h' or '30d'"),
        ("horizon: 7d", "horizon: 604800", "horizon", "a duration needs a unit: '604800s'"),
        ("round_to: 1h", "round_to: 2.5", "workloads[0].time_limit.round_to", "'2.5m'"),
    ],
    ids=["rate", "run-time median", "horizon", "round_to"],
)  # fmt: skip
def test_a_bare_number_for_a_rate_or_a_duration_is_refused_with_the_unit_to_write(
    tmp_path: Path, old: str, new: str, field: str, words: str
) -> None:
    text = BASE.replace(old, new)
    assert_refused(tmp_path, text, line_of(text, new), field, words)


def test_a_bare_zero_stays_allowed_where_zero_is(tmp_path: Path) -> None:
    text = BASE + "models:\n  slurm:\n    requeue_delay: 0\n    qos:\n      - {name: q, grace_time: 0}\n"
    loaded = load_scenario(write(tmp_path, text))
    assert loaded.scenario.models.slurm.requeue_delay == 0.0


def _unit_fields(schema: Any, found: list[dict[str, Any]]) -> None:
    if isinstance(schema, dict):
        options = schema.get("anyOf", [])
        patterns = {option.get("pattern") for option in options if isinstance(option, dict)}
        if patterns & {DURATION_PATTERN, RATE_PATTERN}:
            found.append(schema)
        for value in schema.values():
            _unit_fields(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _unit_fields(value, found)


def test_the_schema_has_no_bare_number_for_a_rate_or_a_duration() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    found: list[dict[str, Any]] = []
    _unit_fields(schema, found)
    assert len(found) > 30  # every Duration and Rate field of the scenario
    for field in found:
        for option in field["anyOf"]:
            assert option.get("type") != "number" and option.get("type") != "integer", field
            assert "pattern" in option or option == {"const": 0}, field
    rate = schema["$defs"]["Arrival"]["properties"]["rate"]
    assert "with its unit" in rate["description"]
    slurm = schema["$defs"]["SlurmSection"]["properties"]
    assert slurm["priority_max_age"]["default"] == "1w"  # written as a file must write it
    assert slurm["bf_interval"]["type"] == "integer" and "seconds" in slurm["bf_interval"]["description"]
    median = schema["$defs"]["LogNormal"]["properties"]["median"]
    assert {"const": 0} not in median["anyOf"]  # gt=0: the bare 0 is not offered


def test_rates_and_durations_dump_with_units_and_read_back_exactly(tmp_path: Path) -> None:
    text = BASE.replace("rate: 10/day", "rate: 0.3333/s").replace("median: 2h", "median: 5400.5s")
    first = load_scenario(write(tmp_path, text)).scenario
    dumped = first.model_dump(mode="json", exclude_none=True)
    assert dumped["workloads"][0]["arrival"]["rate"].endswith(("/day", "/h", "/s"))
    second = Scenario.model_validate(dumped)
    assert second == first


def test_a_scenario_of_millions_of_jobs_is_valid_with_a_warning(tmp_path: Path) -> None:
    text = BASE.replace("rate: 10/day", "rate: 7/s").replace("horizon: 7d", "horizon: 14d")
    path = write(tmp_path, text)
    code, stdout, stderr = validate(path)
    assert code == 0 and ": ok" in stdout, stderr
    jobs = 7 * 14 * 86400
    assert jobs > WARN_JOBS
    assert (
        f"warning: {path}:{line_of(text, 'rate: 7/s')}: workloads: about {jobs:,} jobs would be synthesised "
        "(workloads[0] training: 7/s over 2w): simulations will be slow and memory-hungry"
    ) in stderr, stderr


def test_bursts_count_in_the_expected_jobs(tmp_path: Path) -> None:
    text = BASE.replace(
        "rate: 10/day}", "rate: 3/s, bursts: [{start: 1d, duration: 2d, factor: 3}]}"
    )  # 3/s over 7 d (1.8 million, no warning), three times that for 2 of them: 3 x (7 + 2 x 2) d
    code, _, stderr = validate(write(tmp_path, text))
    assert code == 0
    assert WARN_JOBS > 3 * 7 * 86400
    assert f"about {3 * 11 * 86400:,} jobs" in stderr and "with its bursts" in stderr, stderr


def test_a_scenario_too_large_for_memory_is_refused(tmp_path: Path) -> None:
    text = BASE.replace("rate: 10/day", "rate: 200/s").replace("horizon: 7d", "horizon: 30d")
    assert MAX_JOBS < 200 * 30 * 86400
    assert_refused(tmp_path, text, line_of(text, "rate: 200/s"), "workloads", "cannot be simulated in memory")


def test_a_horizon_past_a_year_is_valid_with_a_warning(tmp_path: Path) -> None:
    text = BASE.replace("horizon: 7d", "horizon: 400d")
    path = write(tmp_path, text)
    code, _, stderr = validate(path)
    assert code == 0, stderr
    assert f"warning: {path}:{line_of(text, 'horizon')}: horizon: 400d runs past a year" in stderr, stderr


# ---- item 8: trace formats ---------------------------------------------------------------------

TRACE = BASE + ("  - name: replay\n    pool: gpu\n    trace: {path: jobs.swf, format: swf, team: alpha}\n")


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("format: swf", "format: swff", "workloads[2].trace.format", "did you mean 'swf'?"),
        ("format: swf", "format: csv", "workloads[2].trace.format",
         "unknown trace format 'csv' (known: swf, philly, chronus, helios, acme, sacct, alibaba, kubectl)"),
        ("duration: {median: 2h, sigma: 0.5}", "duration: {trace: jobs.swf, format: phily}",
         "workloads[0].duration.format", "did you mean 'philly'?"),
        ("path: jobs.swf", "path: missing.swf", "workloads[2].trace.path", "no such file"),
    ],
    ids=["trace format", "no close format", "empirical run times' format", "missing trace"],
)  # fmt: skip
def test_an_unknown_trace_format_is_caught_by_validate(
    tmp_path: Path, old: str, new: str, field: str, words: str
) -> None:
    (tmp_path / "jobs.swf").write_text("1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    text = TRACE.replace(old, new)
    load_scenario(write(tmp_path, TRACE))  # valid as it is
    assert_refused(tmp_path, text, line_of(text, new), field, words)


def test_a_trace_whose_format_cannot_be_told_names_the_line_of_its_path(tmp_path: Path) -> None:
    (tmp_path / "jobs.log").write_text("some lines\n")
    text = TRACE.replace("{path: jobs.swf, format: swf,", "{path: jobs.log,")
    assert_refused(
        tmp_path, text, line_of(text, "path: jobs.log"), "workloads[2].trace.path",
        "jobs.log: cannot tell the trace format",
    )  # fmt: skip


# ---- item 9: nonsense numbers ------------------------------------------------------------------

NONSENSE = [
    ("share: 2", "share: .nan", "teams[0].share", "finite number"),
    ("share: 2", "share: .inf", "teams[0].share", "finite number"),
    ("peak: 20", "peak: -.inf", "workloads[1].demand.peak", "finite number"),
    ("rate: 10/day", "rate: .nan", "workloads[0].arrival.rate", "finite"),
    ("median: 2h", "median: .inf", "workloads[0].duration.median", "finite"),
    ("median: 2h", "median: " + "9" * 400 + "s", "workloads[0].duration.median", "at most 3650d"),
    ("rate: 10/day", "rate: " + "9" * 400 + "/s", "workloads[0].arrival.rate", "finite"),
    ("median: 2h", "median: -2h", "workloads[0].duration.median", "cannot be negative"),
    ("sigma: 0.5}", "sigma: -1}", "workloads[0].duration.sigma", "greater than or equal to 0"),
    ("max: 1d}", "max: 0}", "workloads[0].time_limit.max", "greater than 0"),
    ("median: 2h", "median: 0", "workloads[0].duration.median", "greater than 0"),
    ("round_to: 1h", "round_to: 0.001s", "workloads[0].time_limit.round_to", "greater than or equal to 1"),
    ("horizon: 7d", "horizon: 0", "horizon", "greater than 0"),
    ("horizon: 7d", "horizon: 4000d", "horizon", "at most 3650d"),
    ("nodes: 4", "nodes: 1000000000000", "cluster.pools[0].nodes", "less than or equal to 100000"),
    ("      nodes: 4\n", "      nodes: 4\n      price_per_gpu_hour: 1e308\n",
     "cluster.pools[0].price_per_gpu_hour", "less than or equal to 1000"),
    ("    share: 2\n", "    share: 2\n    users: 10000000000\n", "teams[0].users",
     "less than or equal to 100000"),
    ('"2x8": 1', '"2x8": 1e308', "workloads[0].size", "at most 1e+09"),
    ('"2x8": 1', '"1000000x8": 1', "workloads[0].size", "at most 100,000 nodes"),
    ("seed: 1", "seed: -1", "seed", "greater than or equal to 0"),
    ("throughput_per_replica: 5", "throughput_per_replica: 1e-320", "workloads[1].throughput_per_replica",
     "greater than or equal to 0.000001"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    NONSENSE,
    ids=[f"{case[2]}={case[1].split(': ')[-1][:12]}" for case in NONSENSE],
)
def test_a_nonsense_number_is_exit_2_with_file_line_and_field(
    tmp_path: Path, old: str, new: str, field: str, words: str
) -> None:
    text = BASE.replace(old, new, 1)
    assert text != BASE
    last = new.strip().splitlines()[-1]
    assert_refused(tmp_path, text, line_of(text, last), field, words)


def test_synthesis_of_extreme_accepted_values_raises_no_numpy_warning(tmp_path: Path) -> None:
    from gpuplan.workload.synthesis import synthesize

    text = (
        BASE.replace("arrival: {rate: 10/day}", "arrival: {rate: 20/day, diurnal: {peak_to_trough: 1000}, "
                     "weekly: {weekend_factor: 1000}, bursts: [{start: 0, duration: 3650d, factor: 1000}]}")
        .replace("sigma: 0.5}", "sigma: 10, max: 3650d}")
        .replace("{over_request: 2, round_to: 1h, max: 1d}", "{over_request: 1000, sigma: 10, round_to: 1s}")
        .replace("demand: {peak: 20, trough: 2}", "demand: {peak: 1000000000, trough: 0, noise: 10}")
        .replace("throughput_per_replica: 5", "throughput_per_replica: 0.000001")
        .replace("seed: 1", "seed: 9223372036854775807")
    )  # fmt: skip
    loaded = load_scenario(write(tmp_path, text))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (overflow, invalid value) fails the test
        workload = synthesize(loaded)
    assert len(workload.jobs.submit_s) > 0
    assert float(workload.jobs.duration_s.min()) >= 1 and float(workload.jobs.time_limit_s.max()) < 1e300


def test_every_bundled_example_still_validates() -> None:
    paths = sorted(EXAMPLES.glob("*.yaml"))
    result = runner.invoke(app, ["validate", *map(str, paths)])
    assert result.exit_code == 0, result.stderr


def test_a_lone_surrogate_escape_is_refused_with_its_line(tmp_path: Path) -> None:
    # "\ud800" is a valid YAML escape but no character: printing or writing it as UTF-8 fails
    path = tmp_path / "s.yaml"
    path.write_text(BASE.replace("name: small", 'name: "a \\ud800 b"'))
    with pytest.raises(InputError, match=r"s\.yaml:1: an escape that is no character"):
        load_yaml(path)


def test_validate_reads_a_service_demand_curve(tmp_path: Path) -> None:
    seed = DATA / "fuzz" / "kubernetes-kueue.yaml"
    scenario = tmp_path / "k.yaml"
    scenario.write_text(seed.read_text())
    (tmp_path / "demand.csv").write_text("time_s,requests_per_s\n0,12\n3600\n7200,45\n")
    result = runner.invoke(app, ["validate", str(scenario)])
    assert result.exit_code == 2
    assert "k.yaml:" in result.stderr and "demand.csv:3: requests_per_s" in result.stderr


def test_a_scenario_that_is_not_utf8_names_its_line_and_column(tmp_path: Path) -> None:
    # the scenario's reader decodes as the trace readers do (workload.textfile.decode_utf8); a
    # byte-order mark is dropped
    path = tmp_path / "s.yaml"
    path.write_bytes(BASE.encode().replace(b"name: small", b"name: sm\xffall"))
    with pytest.raises(InputError, match=r"s\.yaml:1: not UTF-8 text: byte 0xff at column 9"):
        load_yaml(path)
    path.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    assert load_yaml(path).data["name"] == "small"
