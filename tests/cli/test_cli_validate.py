"""`tui validate`: good files pass, a bad file lists every problem with file:line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.cli_support import Tui, shell_task, write_tasks

SAMPLES = Path(__file__).resolve().parents[2] / "sample_tasks"


def test_good_file_validates(tui: Tui) -> None:
    good = write_tasks(
        tui.dir / "good.yaml",
        [
            shell_task("build", "echo build"),
            shell_task("test", "echo test", depends_on=["build"], timeout="1m"),
        ],
    )
    res = tui("validate", str(good), db=False)
    assert res.returncode == 0, str(res)
    assert "2 task(s) valid" in res.stdout
    assert "error" not in res.stderr


@pytest.mark.parametrize(
    "sample", sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.yaml"))
)
def test_every_sample_file_validates(tui: Tui, sample: str) -> None:
    res = tui("validate", str(SAMPLES / sample), db=False)
    assert res.returncode == 0, str(res)
    assert "valid" in res.stdout


def test_sample_directory_validates_as_a_whole(tui: Tui) -> None:
    res = tui("validate", str(SAMPLES), db=False)
    assert res.returncode == 0, str(res)
    assert re.search(r"ok: \d+ task\(s\) valid", res.stdout)


BAD = """\
tasks:
  - name: a
    agent:
      type: shel
      instructions: echo hi
  - name: b
    priority: urgent
    agent:
      type: shell
  - name: a
    depends_on: [nope]
    timeout: forever
    agent:
      type: shell
      instructions: echo
"""


def test_bad_file_lists_every_problem_with_file_and_line(tui: Tui) -> None:
    bad = tui.dir / "bad.yaml"
    bad.write_text(BAD, encoding="utf-8")
    res = tui("validate", str(bad), db=False)
    assert res.returncode == 2, str(res)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    # (line, words the message must contain) for each problem planted above.
    expected = [
        (4, "shel"),  # unknown agent type
        (7, "urgent"),  # bad priority
        (8, "instructions"),  # missing instructions (reported at the agent: key)
        (10, "duplicate task name"),
        (11, "nope"),  # unknown dependency
        (12, "forever"),  # bad duration
    ]
    for line, word in expected:
        assert any(f"bad.yaml:{line}:" in e and word in e for e in errors), (
            f"no error for line {line} mentioning {word!r}\n{res.stderr}"
        )
    assert len(errors) == len(expected), res.stderr
    assert "ok:" not in res.stdout


def test_problems_across_several_files_are_all_reported(tui: Tui) -> None:
    good = write_tasks(tui.dir / "good.yaml", shell_task("fine", "true"))
    bad1 = tui.dir / "one.yaml"
    bad1.write_text("name: x\nagent:\n  type: shell\n", encoding="utf-8")
    bad2 = tui.dir / "two.yaml"
    bad2.write_text("name: y\nagent: {type: shell, instructions: hi}\ncolour: red\n")
    res = tui("validate", str(good), str(bad1), str(bad2), db=False)
    assert res.returncode == 2, str(res)
    assert "one.yaml:" in res.stderr
    assert "two.yaml:3:" in res.stderr and "colour" in res.stderr
    assert "good.yaml" not in res.stderr


def test_malformed_yaml_is_reported_with_its_line(tui: Tui) -> None:
    bad = tui.dir / "mal.yaml"
    bad.write_text("tasks:\n  - name: x\n   agent: [\n", encoding="utf-8")
    res = tui("validate", str(bad), db=False)
    assert res.returncode == 2, str(res)
    assert re.search(r"mal\.yaml:\d+: .*invalid YAML", res.stderr), res.stderr


def test_missing_file_is_reported(tui: Tui) -> None:
    res = tui("validate", str(tui.dir / "absent.yaml"), db=False)
    assert res.returncode == 2, str(res)
    assert "absent.yaml" in res.stderr and "not found" in res.stderr


# config.toml tables the loader applies to every task file, each with one planted mistake:
# (the table, the field the error names, words of its fix).
BAD_CONFIG = [
    ('[summarizer]\nagent = "robot"\n', "summarizer.agent", "use claude, gemini, codex, or shell"),
    ("[summarizer]\nmodel = 5\n", "summarizer.model", 'quote it: "5"'),
    (
        '[summarizer]\nstrategy = "moderate"\ncompaction = {threshold = 0}\n',
        "summarizer.compaction.threshold",
        "use a number of characters >= 1",
    ),
    (
        '[summarizer]\ncompaction = {trigger = "sometimes"}\n',
        "summarizer.compaction.trigger",
        "use on_threshold (the default), on_completion, or every",
    ),
    ("[summarizer]\ncompaction = {every = 3}\n", "summarizer.compaction", "leave every out"),
    ('[summarizer]\ncompaction = {trigger = "every"}\n', "summarizer.compaction", "every: N"),
    ('[classifier]\nagent = "nobody"\n', "classifier.agent", "use claude, gemini, codex, or shell"),
    ('[classifier]\nmodle = "haiku"\n', "classifier.modle", "did you mean `model`?"),
]


@pytest.mark.parametrize(("toml", "field", "fix"), BAD_CONFIG)
def test_a_bad_summarizer_or_classifier_table_fails_validate_as_it_fails_run(
    tui: Tui, toml: str, field: str, fix: str
) -> None:
    config = tui.dir / ".tui" / "config.toml"
    config.parent.mkdir()
    config.write_text(toml, encoding="utf-8")
    marker = tui.dir / "ran"
    tasks = write_tasks(tui.dir / "t.yaml", shell_task("a", f"touch {marker}"))
    checked = tui("validate", str(tasks), db=False)
    assert checked.returncode == 2, str(checked)
    assert "ok:" not in checked.stdout
    errors = [ln for ln in checked.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, checked.stderr
    assert errors[0].startswith(f"error: {config}:1: {field}: "), errors
    assert fix in errors[0].partition("Fix: ")[2], errors
    # `tui run` refuses the same file with the same words, before anything runs.
    ran = tui("run", str(tasks))
    assert ran.returncode == 2, str(ran)
    assert errors[0] in ran.stderr.splitlines(), ran.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    ("head", "field", "fix"),
    [
        ("summarizer: {agent: robot}", "summarizer.agent", "use claude, gemini, codex"),
        ("summarizer: {compaction: {every: 2}}", "summarizer.compaction", "leave every out"),
        ("classifier: {agent: nobody}", "classifier.agent", "use claude, gemini, codex"),
    ],
)
def test_a_bad_summarizer_or_classifier_of_a_task_file_is_named_with_its_fix(
    tui: Tui, head: str, field: str, fix: str
) -> None:
    tasks = tui.dir / "t.yaml"
    tasks.write_text(
        f"{head}\ntasks:\n  - name: a\n    agent: {{type: shell, instructions: 'true'}}\n",
        encoding="utf-8",
    )
    res = tui("validate", str(tasks), db=False)
    assert res.returncode == 2, str(res)
    assert f"t.yaml:1: {field}: " in res.stderr and fix in res.stderr, res.stderr
