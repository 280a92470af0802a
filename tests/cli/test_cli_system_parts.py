"""`system:` prompt parts checked by the real `tui validate`, with the config's contexts."""

from __future__ import annotations

import os

import pytest

from tests.cli.cli_support import Tui, assert_no_traceback
from tui.agents.gemini_protocol import with_system_append
from tui.config.system_parts import named_parts
from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text
from tui.model.system_parts import with_system

BAD = """\
tasks:
  - name: typo
    system: [house-rule]
    agent: {instructions: hi}
  - name: on-shell
    system: Be careful.
    agent: {type: shell, instructions: echo hi}
  - name: missing
    system:
      - Some text first.
      - nowhere
    agent: {instructions: hi}
  - name: fine
    system: [house-rules, Plain text is fine.]
    agent: {type: gemini, instructions: hi}
"""


def test_unknown_parts_and_parts_where_they_cannot_apply(tui: Tui) -> None:
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text('[contexts.house-rules]\nprompt = "House rules."\n')
    path = tui.dir / "sys.yaml"
    path.write_text(BAD)
    res = tui("validate", str(path), db=False)
    assert res.returncode == 2, str(res)
    assert_no_traceback(res)
    err = res.stderr
    assert f"{path}:3: tasks[0].system[0]: unknown system part 'house-rule'" in err, err
    assert "did you mean `house-rules`?" in err
    assert f"{path}:6: tasks[1].system: system does not apply to shell tasks" in err
    assert f"{path}:11: tasks[2].system[1]: unknown system part 'nowhere'" in err
    assert "[contexts.nowhere] with prompt = or file =" in err
    assert "tasks[3]" not in err


def test_a_broken_config_stops_validate_as_it_stops_run(tui: Tui) -> None:
    """`tui validate` loads files as `tui run` does, config and all: a broken config.toml
    fails both, named with its fix, whether or not a task uses one of its parts."""
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text("[contexts.x\n")
    text_only = tui.dir / "text.yaml"
    text_only.write_text("name: t\nsystem: Just text.\nagent: {instructions: hi}\n")
    named = tui.dir / "named.yaml"
    named.write_text("name: t\nsystem: house\nagent: {instructions: hi}\n")
    for path in (text_only, named):
        res = tui("validate", str(path), db=False)
        assert res.returncode == 2, str(res)
        assert_no_traceback(res)
        [error] = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert error.startswith(f"error: {os.fspath(config / 'config.toml')}:1: "), error
        assert "Fix:" in error
        ran = tui("run", str(path))
        assert ran.returncode == 2 and error in ran.stderr.splitlines(), str(ran)


def test_a_part_looked_up_in_a_broken_config_names_it(tui: Tui) -> None:
    """Where a file is loaded without the config's checks first (the app's `o`), a named part
    still says why it cannot be found."""
    (tui.dir / "user-config").mkdir(exist_ok=True)
    (tui.dir / "user-config" / "config.toml").write_text("[contexts.x\n")
    with pytest.raises(TaskFileError) as e:
        load_task_text(
            "name: t\nsystem: house\nagent: {instructions: hi}\n", "named.yaml", parts=named_parts
        )
    assert "system part 'house' cannot be looked up: the config has errors" in str(e.value)


def test_gemini_and_codex_get_the_parts_and_the_block_before_the_prompt() -> None:
    [task] = load_task_text(
        "name: g\nvariables: [{name: env, default: prod}]\nsystem: Be exact.\n"
        "agent: {type: gemini, instructions: go}\n",
        "g.yaml",
    ).tasks
    prompt = with_system_append("go", with_system(task))
    assert prompt.startswith("=== Standing instructions ===\nBe exact.\n\n<current_task_context>")
    assert "task: g\nenv: prod\n</current_task_context>" in prompt
    assert prompt.endswith("=== End of standing instructions ===\n\ngo")
