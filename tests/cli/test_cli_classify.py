"""`[settings] classify`: a task that leaves agent.type out gets its agent from the first
matching rule (tags, name pattern, project), through the real `tui` command."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli.cli_support import Tui, assert_no_traceback, wait_until
from tui.model.classify import ClassifyRule
from tui.model.loader import load_task_text

CONFIG = """\
[settings]
classify = [
  {tags = ["docs"], agent = "shell"},
  {name = "gem-*", agent = "gemini", model = "gemini-2.5-flash"},
  {project = "/srv/codex-*", agent = "codex"},
]
"""


def test_rules_choose_the_agent_of_tasks_that_do_not_say(tui: Tui) -> None:
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(CONFIG)
    path = tui.dir / "c.yaml"
    path.write_text(
        "tasks:\n"
        "  - {name: notes, tags: [docs], agent: {instructions: 'echo classified'}}\n"
        "  - {name: chosen, tags: [docs], agent: {type: shell, instructions: 'echo mine'}}\n"
    )
    res = tui("run", str(path))
    assert res.returncode == 0, str(res)  # as claude (not installed here) it would fail
    listed = {t["name"]: t for t in json.loads(tui("ls", "--json").stdout)}
    assert listed["notes"]["state"] == "COMPLETED"
    assert "classified" in tui("logs", "notes").stdout


def test_a_bad_rule_is_a_config_error(tui: Tui) -> None:
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text('[settings]\nclassify = [{agent = "gemini"}]\n')
    res = tui("config", "validate", db=False)
    assert res.returncode == 2, str(res)
    assert_no_traceback(res)
    assert "classify" in res.stderr and "at least one of tags, name or project" in res.stderr


def rules() -> list[ClassifyRule]:
    return [
        ClassifyRule.model_validate(r)
        for r in (
            {"tags": ["docs"], "agent": "shell"},
            {"name": "gem-*", "agent": "gemini", "model": "gemini-2.5-flash"},
            {"project": "/srv/codex-*", "agent": "codex"},
        )
    ]


def load(text: str) -> list[tuple[str, str, str]]:
    tasks = load_task_text(text, "t.yaml", classify=rules).tasks
    return [(t.name, t.agent.type, t.agent.model) for t in tasks]


def test_first_matching_rule_wins_and_a_written_type_or_model_is_kept(tmp_path: Path) -> None:
    assert load(
        "tasks:\n"
        "  - {name: gem-docs, tags: [docs], agent: {instructions: x}}\n"
        "  - {name: gem-a, agent: {instructions: x}}\n"
        "  - {name: gem-b, agent: {instructions: x, model: gemini-2.5-pro}}\n"
        "  - {name: c, agent: {instructions: x, project_dir: /srv/codex-1}}\n"
        "  - {name: d, agent: {instructions: x, project_dir: /srv/other}}\n"
        "  - {name: gem-c, agent: {type: claude, instructions: x}}\n"
    ) == [
        ("gem-docs", "shell", ""),
        ("gem-a", "gemini", "gemini-2.5-flash"),
        ("gem-b", "gemini", "gemini-2.5-pro"),
        ("c", "codex", ""),
        ("d", "claude", ""),  # no rule: the default
        ("gem-c", "claude", ""),  # the task said
    ]


def test_the_classifier_agent_picks_and_tui_ls_shows_classifying_meanwhile(tui: Tui) -> None:
    """config.toml's [classifier] (a scripted one: a shell command emitting JSON) classifies
    what no rule does; until it answers, `tui ls` shows the task as classifying."""
    gate = tui.dir / "gate"
    os.mkfifo(gate)
    answer = tui.dir / "answer.json"
    answer.write_text('{"agent": "shell"}\n')
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(
        f'[classifier]\nagent = "shell"\nprompt = \'read -r _ < "{gate}"; cat "{answer}"\'\n'
    )
    path = tui.dir / "c.yaml"
    path.write_text("tasks:\n  - {name: notes, agent: {instructions: 'echo classified'}}\n")
    assert tui("validate", str(path), db=False).returncode == 0
    proc = tui.popen("run", str(path))
    # `tui ls` as a person reads it, and --json.
    line = wait_until(
        lambda: next((ln for ln in tui("ls").stdout.splitlines() if " notes " in ln), ""),
        "notes listed",
        proc=proc,
    )
    assert "classifying" in line.split() and " ? " in line, line
    [notes] = [t for t in tui.ls() if t["name"] == "notes"]
    assert (notes["state"], notes["phase"]) == ("PENDING", "classifying")
    gate.write_text("go\n")  # the classifier answers
    out, errs = proc.communicate(timeout=90)
    assert proc.returncode == 0, out + errs
    listed = tui.by_name()
    assert listed["notes"]["state"] == "COMPLETED" and listed["notes"]["agent"] == "shell"
    assert listed["notes"]["phase"] == ""
    assert listed["classify:notes"]["tags"] == ["classification"]
    assert "classified" in tui("logs", "notes").stdout


def test_a_bad_classifier_table_is_a_config_error(tui: Tui) -> None:
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text('[classifier]\nagent = "taskfile"\nmodle = "x"\n')
    res = tui("config", "validate", db=False)
    assert res.returncode == 2, str(res)
    assert "classifier.agent must be one of claude" in res.stderr
    assert "did you mean `model`?" in res.stderr
