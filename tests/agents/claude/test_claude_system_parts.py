"""`system:` parts and the <current_task_context> block reach the real `claude` CLI's system
prompt (as the scripted model server receives it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.claude.conftest import needs_cli
from tests.agents.claude.model_server import ModelServer, text
from tests.agents.cli_support import settled
from tui.config.system_parts import named_parts
from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.states import State

pytestmark = needs_cli

TASKS = """\
variables:
  - {{name: lang, default: python}}
vars: {{lang: go}}
tasks:
  - name: sys
    variables:
      - {{name: depth, type: number, default: 2}}
    system: [house-rules, "Answer in {{{{lang}}}} terms.", terse]
    agent:
      type: claude
      project_dir: {project}
      skip_planning: true
      system_prompt_append: Appended last.
      instructions: zq-system go
"""


async def test_parts_text_append_and_task_context_reach_the_system_prompt(
    engine: Engine,
    model: ModelServer,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (project / "terse.md").write_text("Keep every answer under ten words.\n")
    (config / "config.toml").write_text(
        '[contexts.house-rules]\nprompt = "Follow the house rules."\n\n'
        f'[contexts.terse]\nfile = "{project / "terse.md"}"\n'
    )
    monkeypatch.setenv("TUI_CONFIG_DIR", str(config))
    [task] = load_task_text(TASKS.format(project=project), "t.yaml", parts=named_parts).tasks
    model.script("zq-system", [text("ok")])
    await engine.submit([task])
    await settled(engine, task.id)
    rec = await engine.get(task.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason

    [request] = model.main_requests("zq-system")
    system = json.dumps(request.body.get("system"))
    wanted = [
        "Follow the house rules.",
        "Answer in go terms.",
        "Keep every answer under ten words.",
        "Appended last.",
        "<current_task_context>\\ntask: sys\\nlang: go\\ndepth: 2\\n</current_task_context>",
    ]
    at = [system.find(w) for w in wanted]
    assert -1 not in at, (at, system[-1500:])
    assert at == sorted(at)  # in that order
    assert "zq-system" not in system  # the instructions are the user's message, not system
