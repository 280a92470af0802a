"""`[executor]`: which executor runs tasks, checked like every other section."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tui.config.executor import executor_settings, make_executor
from tui.config.load import ConfigError
from tui.config.merged import load_config


def test_defaults_to_the_local_executor(dirs):
    settings = executor_settings()
    assert (settings.kind, settings.address, settings.forward_env) == ("local", "auto", [])
    assert make_executor(settings) is None  # the engine's own LocalExecutor


def test_local_keys_win_and_the_flag_wins_over_both(dirs):
    dirs.write_global('[executor]\nkind = "ray"\naddress = "ray://head:10001"\n')
    dirs.write_local('[executor]\naddress = "10.0.0.5:6379"\nforward_env = ["ANTHROPIC_API_KEY"]\n')
    settings = executor_settings()
    assert settings.kind == "ray"
    assert settings.address == "10.0.0.5:6379"
    assert settings.forward_env == ["ANTHROPIC_API_KEY"]
    assert executor_settings("local").kind == "local"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ('kind = "rey"', "executor.kind", "did you mean 'ray'"),
        ('address = "a b"', "executor.address", "auto, HOST:PORT or ray://HOST:PORT"),
        ('address = "head-node"', "executor.address", "auto, HOST:PORT or ray://HOST:PORT"),
        ('forward_env = ["ANTHROPIC_API_KEY=sk-x"]', "executor.forward_env", "names only"),
        ("nodes = 3", "executor.nodes", "unknown key 'nodes'"),
    ],
)
def test_bad_executor_section_names_file_field_and_fix(dirs, body, field, message):
    path = dirs.write_global(f"[executor]\n{body}\n")
    with pytest.raises(ConfigError) as caught:
        load_config()
    (issue,) = caught.value.issues
    assert issue.file == str(path)
    assert issue.field == field
    assert message in f"{issue.message} {issue.fix}"


def test_ray_chosen_where_ray_is_missing_says_how_to_install(tmp_path):
    # A real `tui run` in which `import ray` fails, as where the extra is not installed.
    script = (
        "import sys; sys.modules['ray'] = None\nfrom tui.cli.main import main\nsys.exit(main())\n"
    )
    task = tmp_path / "t.yaml"
    task.write_text("name: a\nagent: {type: shell, instructions: 'true'}\n")
    argv = [sys.executable, "-c", script, "run", str(task), "--executor", "ray"]
    env = {**os.environ, "TUI_CONFIG_DIR": str(tmp_path / "cfg")}
    res = subprocess.run(
        [*argv, "--db", str(tmp_path / "t.db")], capture_output=True, text=True, env=env
    )
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert "pip install 'tui[ray]'" in res.stderr
