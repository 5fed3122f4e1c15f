"""``gpuplan init``: the written scenario validates, answers change it, and bad answers are named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpuplan.advisor import advise
from gpuplan.cli import app
from gpuplan.errors import InputError
from gpuplan.inputs import load_input
from gpuplan.scenario.init import (
    ANSWERS_DOC,
    QUESTIONS,
    Answers,
    answers_reference,
    check_answers,
    read_answers,
    scenario_text,
    write_scenario,
)
from gpuplan.scenario.load import load_scenario

from builders import ROOT

runner = CliRunner()


def written(tmp_path: Path, **answers: Any) -> Any:
    """The scenario written for ``answers``, loaded back with the scenario loader."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "scenario.yaml"
    return write_scenario(check_answers(answers), path, overwrite=True).scenario


def test_defaults_write_a_valid_commented_scenario(tmp_path: Path) -> None:
    scenario = written(tmp_path)
    text = (tmp_path / "scenario.yaml").read_text()
    assert scenario.name == "gpu-platform"
    assert [team.name for team in scenario.teams] == ["research-1", "research-2"]
    assert text.count("\n#") + text.count("  #") >= 10, "the file explains itself"
    assert "# kubernetes_skills: none | low | medium | high" in text  # unanswered questions are shown


@pytest.mark.parametrize(
    ("answers", "check"),
    [
        ({"research_teams": 3}, lambda s: [t.name for t in s.teams] == [f"research-{i}" for i in (1, 2, 3)]),
        ({"services": 2}, lambda s: sum(w.kind == "service" for w in s.workloads) == 2
         and [p.name for p in s.cluster.pools] == ["train", "serve"]),
        ({"pipelines_per_day": 4}, lambda s: any(w.kind == "pipeline" for w in s.workloads)
         and any(t.persona == "ml-engineer" for t in s.teams)),
        ({"notebooks_per_day": 10}, lambda s: any(w.kind == "interactive" for w in s.workloads)),
        ({"kubernetes_skills": "high", "containerised": "all"},
         lambda s: (s.organisation.kubernetes_skills, s.organisation.containerised) == ("high", "all")),
        ({"p95_wait": "2h"}, lambda s: s.targets.p95_wait == 7200),
        ({"platform_today": "kubernetes"}, lambda s: s.organisation.platform_today == "kubernetes"),
        ({"multi_node_percent": 0}, lambda s: all(w.size_mix() == [(1, 8, 1.0)] for w in s.workloads
                                                  if w.name.endswith("training"))),
        ({"training_nodes": 3, "multi_node_percent": 50},
         lambda s: {k for w in s.workloads if w.name.endswith("training") for k in w.size} == {"1x8", "2x8"}),
        ({"price_per_gpu_hour": 2.5}, lambda s: s.cluster.pools[0].price_per_gpu_hour == 2.5),
        ({"training_shape": "BM.GPU.A100-v2.8", "name": "a: 'quoted' name"},
         lambda s: s.cluster.pools[0].shape == "BM.GPU.A100-v2.8" and s.name == "a: 'quoted' name"),
    ],
    ids=["three research teams", "two services", "pipelines", "notebooks", "organisation answers",
         "p95 target", "platform today", "no multi-node", "small pool caps job sizes", "price",
         "other shape, awkward name"],
)  # fmt: skip
def test_answers_change_the_scenario(tmp_path: Path, answers: dict[str, Any], check: Any) -> None:
    default = written(tmp_path / "default")
    changed = written(tmp_path / "changed", **answers)
    assert check(changed)
    assert changed != default


def test_init_asks_what_the_teams_run_today(tmp_path: Path) -> None:
    """The question is asked, written under organisation: and read back; unanswered, it is shown."""
    question = next(q for q in QUESTIONS if q.key == "platform_today")
    assert question.choices == ("unknown", "none", "slurm", "kubernetes", "both") and question.when is None
    assert written(tmp_path / "unanswered").organisation.platform_today is None
    text = (tmp_path / "unanswered" / "scenario.yaml").read_text()
    assert "  # platform_today: none | slurm | kubernetes | both   (not answered" in text
    for answer in ("none", "slurm", "kubernetes", "both"):
        scenario = written(tmp_path / answer, platform_today=answer)
        assert scenario.organisation.platform_today == answer
        assert f"\n  platform_today: {answer}\n" in (tmp_path / answer / "scenario.yaml").read_text()
    with pytest.raises(InputError, match="Input should be") as raised:
        check_answers({"platform_today": "openshift"}, "answers.yaml")
    assert raised.value.field == "platform_today"


def test_every_question_is_an_answer_field_and_asked_once() -> None:
    keys = [question.key for question in QUESTIONS]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(Answers.model_fields)


@pytest.mark.parametrize(
    ("answers", "field", "message"),
    [
        ({"kubernetes_skill": "high"}, "kubernetes_skill", "did you mean 'kubernetes_skills'"),
        ({"training_shape": "BM.GPU.H100"}, "training_shape", "unknown OCI shape"),
        ({"horizon": "soon"}, "horizon", "expected a duration"),
        ({"research_teams": -1}, "research_teams", "greater than or equal to 0"),
        ({"containerised": "partly"}, "containerised", "Input should be"),
    ],
    ids=["misspelt question", "unknown shape", "bad duration", "negative count", "answer not offered"],
)
def test_bad_answers_are_named(answers: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as raised:
        check_answers(answers, "answers.yaml")
    assert raised.value.field == field and raised.value.path == "answers.yaml"


def test_an_empty_workload_mix_is_refused() -> None:
    with pytest.raises(InputError, match="workload mix is empty"):
        scenario_text(check_answers({"research_teams": 0}))


def test_answers_file_through_the_cli(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"services": 1, "pipelines_per_day": 2, "kubernetes_skills": "high"}))
    out = tmp_path / "platform.yaml"
    result = runner.invoke(app, ["init", "--answers", str(answers), "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert f"wrote {out}" in result.stdout.replace("\n", "")
    loaded = load_scenario(out)
    assert loaded.scenario.organisation.kubernetes_skills == "high"
    assert yaml.safe_load(out.read_text())["workloads"][-1]["kind"] == "service"

    again = runner.invoke(app, ["init", "--answers", str(answers), "--out", str(out)])
    assert again.exit_code == 2 and "exists already" in again.stderr
    assert (
        runner.invoke(app, ["init", "--answers", str(answers), "--out", str(out), "--force"]).exit_code == 0
    )

    answers.write_text("services: [")
    broken = runner.invoke(app, ["init", "--answers", str(answers), "--out", str(tmp_path / "x.yaml")])
    assert broken.exit_code == 2 and "answers.json:1:" in broken.stderr and "YAML syntax" in broken.stderr


def test_interactive_questionnaire(tmp_path: Path) -> None:
    """Answer a few questions at their prompts and take the defaults for the rest."""
    replies = {
        "name": "lab",
        "research_teams": "1",
        "services": "1",
        "kubernetes_skills": "high",
        "p95_wait": "2h",
    }
    asked = []
    lines = []
    given: dict[str, Any] = {}
    for question in QUESTIONS:
        if question.when is not None and not question.when(given):
            continue
        asked.append(question.key)
        reply = replies.get(question.key, "")
        lines.append(reply)
        given[question.key] = reply or question.default()
    out = tmp_path / "lab.yaml"
    # a bad duration is refused at its prompt and asked again
    lines.insert(asked.index("p95_wait"), "soon")
    result = runner.invoke(app, ["init", "--out", str(out)], input="\n".join(lines) + "\n")
    assert "expected a duration" in result.stdout
    assert result.exit_code == 0, result.stdout + result.stderr
    scenario = load_scenario(out).scenario
    assert scenario.name == "lab"
    assert [t.name for t in scenario.teams] == ["research-1", "product"]
    assert scenario.organisation.kubernetes_skills == "high"
    assert scenario.targets.p95_wait == 7200
    assert "inference_shape" in asked and "slo_attainment" in asked


def test_answers_move_the_advisors_reading(tmp_path: Path) -> None:
    """A platform of services run by Kubernetes people reads as Kubernetes; MPI research as Slurm."""
    estimates = {}
    for label, answers in {
        "research": {"research_teams": 3, "multi_node_percent": 60, "existing_slurm_scripts": "high"},
        "product": {"research_teams": 0, "services": 3, "pipelines_per_day": 6, "kubernetes_skills": "high",
                    "containerised": "all", "cicd_gitops": "high", "self_service": "high"},
    }.items():  # fmt: skip
        path = tmp_path / f"{label}.yaml"
        write_scenario(check_answers(answers), path)
        summary = {"models": {"slurm": {"wait_s": {"p95": 0.0}, "gpu_utilization": 0.5}}}
        rec = advise(summary, load_input(path))
        estimates[label] = {e.family: e.static_score for e in rec.not_simulated}
        estimates[label]["slurm"] = rec.models[0].static_score
    assert max(estimates["research"], key=estimates["research"].__getitem__) == "slurm"
    assert max(estimates["product"], key=estimates["product"].__getitem__) == "kubernetes"


def test_an_unknown_answer_key_lists_the_valid_keys_with_its_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text("services: 1\nkubernetes_skill: high\n")
    with pytest.raises(InputError) as raised:
        read_answers(answers)
    error = raised.value
    assert (error.path, error.line, error.field) == (str(answers), 2, "kubernetes_skill")
    assert "did you mean 'kubernetes_skills'?" in error.message
    assert all(key in error.message for key in Answers.model_fields), error.message
    # with no close match, the list alone
    with pytest.raises(InputError, match="The questions are: name, horizon") as raised:
        check_answers({"zzz": 1}, "answers.yaml")
    assert "did you mean" not in raised.value.message


def test_a_bad_answer_value_names_its_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text('{\n  "services": 1,\n  "training_jobs_per_day": NaN\n}\n')
    result = runner.invoke(app, ["init", "--answers", str(answers), "--out", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2
    assert f"{answers}:3: training_jobs_per_day:" in " ".join(result.stderr.split()), result.stderr


def test_an_answers_file_is_read_with_the_bounded_loader(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    answers.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="values once aliases are expanded") as raised:
        read_answers(answers)
    assert raised.value.line == 5  # a4, on line 5, stands for 111,111 values


def test_the_answer_keys_are_documented() -> None:
    """docs/init-answers.md is generated from Answers and QUESTIONS; regenerate it when they change:
    python -m gpuplan.scenario.init > docs/init-answers.md"""
    doc = (ROOT / ANSWERS_DOC).read_text()
    assert doc == answers_reference(), "docs/init-answers.md is stale: python -m gpuplan.scenario.init"
    for key in Answers.model_fields:
        assert f"| `{key}` |" in doc


def test_init_does_not_create_a_missing_directory(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "dir" / "x.yaml"
    with pytest.raises(InputError, match="does not exist") as raised:
        write_scenario(check_answers({}), out)
    assert raised.value.path == str(out) and str(out.parent) in raised.value.message
    assert not (tmp_path / "missing").exists()
    result = runner.invoke(app, ["init", "--out", str(out)], input="\n" * len(QUESTIONS))
    assert result.exit_code == 2 and not (tmp_path / "missing").exists()
