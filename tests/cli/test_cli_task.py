"""`tui task`, `tui config validate` and `tui doctor` as a user runs them."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from tests.agents.cli_support import cli_path
from tests.cli.cli_support import Tui, shell_task, wait_until, write_tasks
from tests.taskfile.conftest import write_real_constructs

HOSTILE = "$(touch pwned) `touch pwned2` \"dq\" 'sq' ; exit 7 #\nline two {instructions}"

GLOBAL = """
[agents.echo]
type = "shell"
script = 'printf "%s\\n" "$TUI_PROMPT"'

[contexts.house]
required = true
prompt = "House rules."

[tasks.review]
alias = "rv"
description = "Review a change"
agent = "echo"
prompt = "Review: {instructions}"
"""

LOCAL = """
[tasks.notes]
description = "Summarise notes"
agent = "echo"
file = "NOTES.md"
prompt = "Notes from {file}:\\n{file_contents}\\nAsk: {instructions}"

[tasks.broken]
agent = "echo"
command = "echo cannot >&2; exit 4"
prompt = "{command_output}"
"""


@pytest.fixture
def configured(tui: Tui, monkeypatch: pytest.MonkeyPatch) -> Tui:
    config = tui.dir / "global"
    config.mkdir()
    (config / "config.toml").write_text(GLOBAL, encoding="utf-8")
    (tui.dir / ".tui").mkdir()
    (tui.dir / ".tui" / "config.toml").write_text(LOCAL, encoding="utf-8")
    monkeypatch.setenv("TUI_CONFIG_DIR", str(config))
    monkeypatch.delenv("TUI_DB", raising=False)
    return tui


def test_task_runs_a_template_end_to_end_with_hostile_text(configured: Tui) -> None:
    tui = configured
    res = tui("task", "rv", "--model", "m1", HOSTILE)  # the text may follow options
    assert res.returncode == 0, str(res)
    assert "running → done" in " ".join(res.stdout.split())
    logs = tui("logs", "review")
    assert logs.stdout == f"House rules.\n\nReview: {HOSTILE}\n", str(logs)
    assert not (tui.dir / "pwned").exists() and not (tui.dir / "pwned2").exists()


def test_task_reads_project_files(configured: Tui) -> None:
    tui = configured
    (tui.dir / "NOTES.md").write_text("- ship it", encoding="utf-8")
    assert tui("task", "notes").returncode == 0
    expected = f"House rules.\n\nNotes from {tui.dir / 'NOTES.md'}:\n- ship it\nAsk: None\n"
    assert tui("logs", "notes").stdout == expected


def test_list_shows_every_template_with_its_source(configured: Tui) -> None:
    res = configured("task", "--list", "--json")
    assert res.returncode == 0, str(res)
    listed = {t["name"]: t for t in json.loads(res.stdout)}
    assert listed["review"] == {
        "name": "review",
        "alias": "rv",
        "description": "Review a change",
        "source": "global",
    }
    assert listed["notes"]["source"] == "local"
    text = configured("task", "--list").stdout
    assert "review" in text and "(rv)" in text and "Summarise notes" in text


def test_unknown_template_is_refused_with_a_suggestion(configured: Tui) -> None:
    res = configured("task", "reveiw")
    assert res.returncode == 2
    assert "did you mean 'review'?" in res.stderr
    assert not configured.db.exists()  # nothing was stored


def test_a_failing_command_stops_before_anything_runs(configured: Tui) -> None:
    res = configured("task", "broken")
    assert res.returncode == 2
    assert "tasks.broken.command: command exited with 4:\n  stderr:\n    cannot" in res.stderr
    assert ".tui/config.toml" in res.stderr


def test_task_hands_the_template_to_a_running_engine(configured: Tui) -> None:
    tui = configured
    release = tui.dir / "release"
    keeper = shell_task("keeper", f"while [ ! -e '{release}' ]; do sleep 0.02; done")
    run = tui.popen("run", str(write_tasks(tui.dir / "k.yaml", [keeper])))
    wait_until(lambda: tui.state_of("keeper") == "RUNNING", "keeper RUNNING", proc=run)
    res = tui("task", "review", "via the socket")
    assert res.returncode == 0, str(res)
    assert "submitted 1 task(s) to the `tui run` (pid" in res.stderr
    assert tui("logs", "review").stdout.endswith("Review: via the socket\n")
    release.touch()
    run.communicate(timeout=60)


def test_config_validate(configured: Tui) -> None:
    res = configured("config", "validate", db=False)
    assert res.returncode == 0, str(res)
    assert "ok: 3 tasks, 0 roles, 1 contexts, 1 agents" in res.stdout
    (configured.dir / ".tui" / "config.toml").write_text('[tasks.x]\nprompt = "{oops}"\n')
    res = configured("config", "validate", db=False)
    assert res.returncode == 2
    assert "tasks.x.prompt: unknown placeholder {oops}" in res.stderr


def test_config_validate_names_unknown_key_actions(configured: Tui) -> None:
    (configured.dir / ".tui" / "config.toml").write_text(
        '[settings.keys]\ncancel_task = "ctrl+k"\ncancle_task = "K"\n'
    )
    res = configured("config", "validate", db=False)
    assert res.returncode == 2, str(res)
    assert "[settings.keys] 'cancle_task' is not a command" in res.stderr
    assert "did you mean 'cancel_task'?" in res.stderr


def fake_cli(path: Path, version: str) -> Path:
    path.write_text(f"#!/bin/sh\necho '{version}'\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_doctor_healthy_reports_versions_and_database(configured: Tui) -> None:
    tui = configured
    fake = fake_cli(tui.dir / "fake-claude", "9.9.9 (Claude Code)")
    with (tui.dir / ".tui" / "config.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[agents.main]\ntype = "claude"\nbin = "{fake}"\n')
    res = tui("doctor")
    assert res.returncode == 0, str(res)
    assert f"{fake} 9.9.9 (Claude Code)" in res.stdout
    assert f"{tui.db} is writable" in res.stdout
    assert "healthy" in res.stdout


def test_doctor_fails_on_a_missing_agent_binary(configured: Tui) -> None:
    tui = configured
    with (tui.dir / ".tui" / "config.toml").open("a", encoding="utf-8") as f:
        f.write('\n[agents.gone]\ntype = "codex"\nbin = "/nonexistent/codex"\n')
    res = tui("doctor")
    assert res.returncode == 1
    assert "agent gone" in res.stdout and "codex CLI not found" in res.stdout


def test_doctor_shows_a_warning_but_passes_on_it(configured: Tui) -> None:
    tui = configured
    with (tui.dir / ".tui" / "config.toml").open("a", encoding="utf-8") as f:
        f.write('\n[tasks.other]\nalias = "rv"\nprompt = "x"\nagent = "echo"\n')
    res = tui("doctor")
    assert res.returncode == 0, str(res)  # errors fail it, warnings are advice
    assert "warning" in res.stdout and "already used by task 'review'" in res.stdout
    assert "healthy, with 1 warning(s) above" in res.stdout


def test_doctor_reports_a_broken_config(configured: Tui) -> None:
    tui = configured
    (tui.dir / ".tui" / "config.toml").write_text("[tasks.x\n", encoding="utf-8")
    res = tui("doctor")
    assert res.returncode == 1
    assert "invalid TOML" in res.stdout
    assert "is writable" in res.stdout  # the other checks still ran


def test_doctor_says_what_each_source_contributed_and_skipped(configured: Tui) -> None:
    tui = configured
    templates = tui.dir / ".tui" / "templates"
    templates.mkdir()
    (templates / "two.xml").write_text(
        '<task type="atomic" name="good"><description>fine</description></task>\n'
        '<task type="atomic" name="bad"><instructions>{{nope}}</instructions>'
        '<inputs><input name="x"/></inputs></task>\n',
        encoding="utf-8",
    )
    write_real_constructs(tui.dir)
    res = tui("doctor")
    assert res.returncode == 0, str(res)  # a template was left out: a warning, not an error
    lines = res.stdout.splitlines()
    assert any(f"{templates / 'two.xml'}: 1 templates; skipped 1" in ln for ln in lines), lines
    assert any("global/config.toml: 1 agents, 1 contexts, 1 templates" in ln for ln in lines)
    assert any(".tui/config.toml: 2 templates" in ln for ln in lines), lines
    taskfile = "Taskfile.yml: 7 task(s) (2 wildcard, 1 with a prompt, 1 with required vars)"
    assert any(taskfile in ln for ln in lines), lines


def test_doctor_database_not_writable(configured: Tui) -> None:
    not_a_dir = configured.dir / "file"
    not_a_dir.write_text("", encoding="utf-8")
    res = configured("doctor", "--db", str(not_a_dir / "tui.db"), db=False)
    assert res.returncode == 1
    assert f"error   database      {not_a_dir / 'tui.db'}" in res.stdout, str(res)


XML = """<task type="atomic" name="count" agent="echo">
  <description>Count things</description>
  <inputs><input name="what" required="true"/></inputs>
  <instructions>Count {{what}}.</instructions>
  <output_format type="json" schema="number"/>
</task>
"""


def test_xml_template_with_vars_and_output_format(configured: Tui) -> None:
    tui = configured
    (tui.dir / ".tui" / "templates").mkdir()
    (tui.dir / ".tui" / "templates" / "count.xml").write_text(XML, encoding="utf-8")
    missing = tui("task", "count")
    assert missing.returncode == 2
    assert "--var what: variable 'what' is required" in missing.stderr
    # The echo agent prints the prompt, which is not a number: output_format fails it.
    res = tui("task", "count", "--var", "what=`sheep`")
    assert res.returncode == 1, str(res)
    (task,) = [t for t in tui.ls() if t["name"] == "count"]
    assert task["state"] == "FAILED"
    assert "output_format: result is not JSON" in task["reason"]
    assert tui("logs", "count", "--stream", "stdout").stdout == "House rules.\n\nCount `sheep`.\n"


@pytest.mark.parametrize("kind", ["claude", "gemini", "codex"])
def test_doctor_reports_the_real_agent_cli_versions(configured: Tui, kind: str) -> None:
    real = cli_path(kind)
    if not real.exists():
        pytest.skip(f"the {kind} CLI is not installed at {real}: run scripts/install-agent-clis")
    with (configured.dir / ".tui" / "config.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[agents.real]\ntype = "{kind}"\nbin = "{real}"\n')
    res = configured("doctor")
    line = next(ln for ln in res.stdout.splitlines() if "agent real" in ln)
    assert line.startswith("ok"), str(res)
    assert re.search(r"\d+\.\d+\.\d+", line), line  # the CLI's own version
