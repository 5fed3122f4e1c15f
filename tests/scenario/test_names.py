"""Names that become configuration keys (issue 43, item 6): letters, digits and ``-_.`` only.

A team ``nl\u200bp`` (a zero-width space) read as a second "nlp" row; a right-to-left override or
a terminal escape in a name would turn a report's or a terminal's line around. Such a name is
refused at load with the file, the line and the field, and the message shows the character by its
code point, never the character itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.scenario.names import name_problem

from builders import SMALL_SCENARIO, gpuplan


def with_team(tmp_path: Path, written: str) -> tuple[Path, int]:
    """SMALL_SCENARIO with a third team, its name written as ``written`` (YAML): the file and the
    line of that name."""
    text = SMALL_SCENARIO.replace("  - name: beta\n", f"  - name: beta\n  - name: {written}\n")
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path, text.splitlines().index(f"  - name: {written}") + 1


@pytest.mark.parametrize(
    ("written", "character"),
    [
        ("nl\u200bp", "U+200B ZERO WIDTH SPACE"),
        ("ab\u202ecd", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ('"ops\\e[31m"', "U+001B a control character"),  # YAML's \e: ESC, a terminal escape
        ("data science", "U+0020 SPACE"),
    ],
    ids=["zero-width space", "right-to-left override", "control character", "space"],
)
def test_a_team_name_outside_the_rule_is_refused(tmp_path: Path, written: str, character: str) -> None:
    path, line = with_team(tmp_path, written)
    code, _, err = gpuplan("validate", str(path))
    assert code == 2
    assert f"{path}:{line}: teams[2].name: " in err, err
    assert f"contains {character}: a name is letters, digits and - _ ." in err, err
    # the name is shown escaped: nothing invisible or reordering reaches the terminal
    assert not {"\u200b", "\u202e", "\x1b"} & set(err), repr(err)


def test_a_plain_name_is_accepted(tmp_path: Path) -> None:
    path, _ = with_team(tmp_path, "ml-ops_2.0")
    code, out, err = gpuplan("validate", str(path))
    assert code == 0, err
    assert "3 team(s)" in out


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ("cluster", "cluster.pools[0].name"),
        ("  slurm:\n    qos: [{name: 'urgen\u200bt'}]\n", "models.slurm.qos[0].name"),
        (
            "  slurm:\n    partitions: [{name: 'hig\u200bh', pool: gpu}]\n",
            "models.slurm.partitions[0].name",
        ),
        (
            "  kubernetes:\n    kueue:\n      clusterQueues:\n"
            "        - {name: all, cohort: 'o\u200brg', flavors: [{name: gpu, nominalQuota: 32}]}\n",
            "models.kubernetes.kueue.clusterQueues[0].cohort",
        ),
        (
            "  kubernetes:\n    kueue:\n      localQueues:\n"
            "        - {name: 'fas\u200bt', namespace: alpha, clusterQueue: default}\n",
            "models.kubernetes.kueue.localQueues[0].name",
        ),
    ],
    ids=["pool", "QoS", "partition", "cohort", "LocalQueue"],
)
def test_every_name_that_becomes_a_key_follows_the_rule(tmp_path: Path, section: str, field: str) -> None:
    if section == "cluster":
        text = SMALL_SCENARIO.replace("    - name: gpu\n", "    - name: 'g\u200bpu'\n")
    else:
        text = SMALL_SCENARIO + "models:\n" + section
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    line = next(n for n, text_line in enumerate(text.splitlines(), 1) if "\u200b" in text_line)
    code, _, err = gpuplan("validate", str(path))
    assert code == 2
    assert f"{path}:{line}: {field}: " in err and "contains U+200B ZERO WIDTH SPACE" in err, err


def test_display_names_are_not_keys(tmp_path: Path) -> None:
    """The scenario's name and description, and workload names, are shown, not configured: spaces and
    punctuation stay allowed there (tests/data/report_script_names.yaml puts HTML in them)."""
    text = SMALL_SCENARIO.replace("name: small\n", "name: Vision Lab (2026)\n").replace(
        "  - name: training\n", "  - name: nightly training\n"
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = gpuplan("validate", str(path))
    assert code == 0, err
    assert "ok — Vision Lab (2026)" in out


def test_name_problem() -> None:
    assert name_problem("Research_2.gpu-a") is None
    assert (
        name_problem("")
        == "is empty: a name is letters, digits and - _ . (as Slurm and Kubernetes accept them)"
    )
    problem = name_problem("caf\u00e9")
    assert problem is not None and problem.startswith("contains U+00E9 LATIN SMALL LETTER E WITH ACUTE:")


@pytest.mark.parametrize(
    ("before", "after", "field"),
    [
        ("name: small\n", "name: 'sma\u200bll'\n", "name"),
        ("  - name: training\n", "  - name: 'night\u202ely'\n", "workloads[0].name"),
        ("  - name: chat\n", '  - name: "chat\\e[2J"\n', "workloads[1].name"),
    ],
    ids=["scenario", "batch workload", "service workload"],
)
def test_a_shown_name_refuses_what_no_reader_sees(
    tmp_path: Path, before: str, after: str, field: str
) -> None:
    """A shown name may hold any printable text, but not a control, zero-width or bidirectional
    character: "training" and "train\u200bing" would read the same in a report."""
    text = SMALL_SCENARIO.replace(before, after)
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    line = text.splitlines().index(after.rstrip("\n")) + 1
    code, _, err = gpuplan("validate", str(path))
    assert code == 2 and f"{path}:{line}: {field}: " in err, err
    assert "two names that read the same would show as two" in err
    assert not {"\u200b", "\u202e", "\x1b"} & set(err), repr(err)
