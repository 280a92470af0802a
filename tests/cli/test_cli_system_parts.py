"""`system:` prompt parts checked by the real `tui validate`, with the config's contexts."""

from __future__ import annotations

import os

from tests.cli.cli_support import Tui, assert_no_traceback
from tui.agents.gemini_protocol import with_system_append
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


def test_a_broken_config_is_named_only_when_a_part_is_used(tui: Tui) -> None:
    config = tui.dir / "user-config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text("[contexts.x\n")
    text_only = tui.dir / "text.yaml"
    text_only.write_text("name: t\nsystem: Just text.\nagent: {instructions: hi}\n")
    assert tui("validate", str(text_only), db=False).returncode == 0
    named = tui.dir / "named.yaml"
    named.write_text("name: t\nsystem: house\nagent: {instructions: hi}\n")
    res = tui("validate", str(named), db=False)
    assert res.returncode == 2, str(res)
    assert_no_traceback(res)
    assert "system part 'house' cannot be looked up: the config has errors" in res.stderr
    assert os.fspath(config / "config.toml") in res.stderr


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
