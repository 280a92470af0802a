"""Keys and tokens never reach a file tui writes: planted in the daemon's environment and in
task files (under any name), then every file under the test's directories is searched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_support import Tui
from tui.config.load import ConfigError
from tui.config.merged import load_config
from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text

# Shaped like real keys, made up (split so no scanner mistakes this file for a leak).
KEYS = {
    "anthropic": "sk-ant-" + "api03-Zq8" + "x7Vw2" * 12,
    "openai": "sk-proj-" + "T3Bl" + "bkFJ9a" * 8,
    "google": "AIza" + "SyD4" + "e5F6g7H8i9J0" * 3,
    "github": "ghp_" + "R2d2C3p0" * 5,
    "aws": "AKIA" + "Q7XW3K9PLM2ZT5VB",
    "slack": "xoxb-" + "1234567890-" + "AbCdEf0987",
}


def shell_task(env: dict[str, str], name: str = "leaky") -> str:
    lines = "".join(f"    {k}: {v}\n" for k, v in env.items())
    return f"name: {name}\nagent:\n  type: shell\n  instructions: echo built\n  env:\n{lines}"


@pytest.mark.parametrize("provider", sorted(KEYS))
def test_a_key_under_any_name_is_refused_in_a_task_file(provider: str) -> None:
    with pytest.raises(TaskFileError) as refused:
        load_task_text(shell_task({"FOO": KEYS[provider]}), "t.yaml")
    [issue] = refused.value.issues
    assert issue.field == "agent.env" and issue.line == 5  # the env: line
    assert "FOO (looks like" in issue.message and "export them in the environment" in issue.message
    assert KEYS[provider] not in str(refused.value)  # the error does not repeat it


@pytest.mark.parametrize(
    "value",
    [
        "disk-usage-monitoring-2024",
        "scikit-learn",
        "en_US.UTF-8",
        "/usr/bin:/bin",
        "xterm-256color",
        "0b5c9a3e-1d2f-4c8a-9e7b-123456789abc",
        "AKIA",
        "ask-questions-first",
    ],
)
def test_ordinary_values_pass(value: str) -> None:
    [task] = load_task_text(shell_task({"FOO": value}), "t.yaml").tasks
    assert task.agent.env == {"FOO": value}


def test_a_key_in_a_config_agents_env_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.toml").write_text(
        f'[agents.helper]\ntype = "claude"\nenv = {{ HELPER_URL = "{KEYS["openai"]}" }}\n'
    )
    with pytest.raises(ConfigError) as refused:
        load_config()
    assert "HELPER_URL (looks like an OpenAI key)" in str(refused.value)
    assert KEYS["openai"] not in str(refused.value)


def test_no_file_tui_writes_holds_a_key(
    tui: Tui, tmp_path: Path, private_runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in the environment the daemon starts from (as a user's shell has them) and in a
    task file; a task runs through the daemon; then db, WAL, logs and state are searched."""
    for provider, key in KEYS.items():
        monkeypatch.setenv(f"{provider.upper()}_API_KEY", key)
    monkeypatch.setenv("INNOCENT_LOOKING", KEYS["anthropic"])
    assert tui("daemon", "start").returncode == 0
    ok = tmp_path / "ok.yaml"
    ok.write_text(shell_task({"GREETING": "hello"}, "fine"))
    leaky = tmp_path / "leaky.yaml"
    leaky.write_text(shell_task({"FOO": KEYS["anthropic"], "BAR": KEYS["github"]}))
    run = tui("run", str(ok))
    assert run.returncode == 0, run
    refused = tui("run", str(leaky))
    assert refused.returncode == 2 and "looks like an Anthropic key" in refused.stderr
    assert tui("validate", str(leaky)).returncode == 2
    assert tui("daemon", "stop").returncode == 0

    written = [
        p
        for root in (tmp_path, private_runtime)
        for p in root.rglob("*")
        if p.is_file() and p not in (leaky,)
    ]
    assert any(p.name == "tui.db" for p in written)
    assert any(p.suffix == ".log" for p in written), written  # the daemon's log was searched
    for path in written:
        data = path.read_bytes()
        for provider, key in KEYS.items():
            assert key.encode() not in data, f"{provider} key in {path}"


def test_a_task_stored_before_these_checks_still_reads_back() -> None:
    """Input checks apply to new input; the database's own specs are read as they are."""
    import json

    from tui.model.task import STORED, Task

    spec: dict[str, Any] = {
        "name": "old",
        "agent": {"type": "shell", "instructions": "x", "env": {"FOO": "v"}},
    }
    spec["retry"] = {"max_attempts": 5000}
    spec["agent"]["env"]["FOO"] = KEYS["slack"]
    with pytest.raises(ValueError):
        Task.model_validate(spec)
    task = Task.model_validate_json(json.dumps(spec), context=STORED)
    assert task.retry.max_attempts == 5000
