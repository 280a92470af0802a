"""`[settings] classify`: a task that leaves agent.type out gets its agent from the first
matching rule (tags, name pattern, project), through the real `tui` command."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import Tui, assert_no_traceback

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
