"""`agent.max_turns` and `priority: critical` through the real `tui` command."""

from __future__ import annotations

import json

from tests.cli.cli_support import Tui, assert_no_traceback

WRONG_TURNS = """\
tasks:
  - name: script
    agent:
      type: shell
      max_turns: 3
      instructions: echo hi
  - name: gem
    agent:
      type: gemini
      max_turns: 3
      instructions: hi
  - name: cdx
    agent:
      type: codex
      max_turns: 3
      instructions: hi
  - name: negative
    agent:
      max_turns: -1
      instructions: hi
  - name: fine
    priority: critical
    agent:
      max_turns: 5
      instructions: hi
"""


def test_max_turns_where_it_cannot_apply_names_file_line_field_and_fix(tui: Tui) -> None:
    path = tui.dir / "turns.yaml"
    path.write_text(WRONG_TURNS)
    res = tui("validate", str(path), db=False)
    assert res.returncode == 2, str(res)
    assert_no_traceback(res)
    err = res.stderr
    assert f"{path}:5: tasks[0].agent.max_turns: agent.max_turns does not apply to shell" in err
    assert "remove it, or make the task a claude or gemini task" in err
    assert "tasks[1]" not in err  # gemini takes it (its settings' model.maxSessionTurns)
    assert f"{path}:15: tasks[2].agent.max_turns:" in err and "codex has no turn limit" in err
    assert f"{path}:19: tasks[3].agent.max_turns: agent.max_turns must be >= 0" in err
    assert "only claude and gemini take it" in err
    assert "fine" not in err and "priority" not in err  # critical and claude's max_turns are fine


def test_critical_runs_first_and_is_listed_as_critical(tui: Tui) -> None:
    order = tui.dir / "order.txt"
    tasks = "\n".join(
        f"  - {{name: {name}, priority: {prio}, agent: {{type: shell, "
        f"instructions: 'echo {name} >> {order}'}}}}"
        for name, prio in [("low", "low"), ("high", "high"), ("crit", "critical")]
    )
    path = tui.dir / "prio.yaml"
    path.write_text(f"tasks:\n{tasks}\n")
    res = tui("run", str(path), "--concurrency", "1")
    assert res.returncode == 0, str(res)
    assert order.read_text().split() == ["crit", "high", "low"]
    listed = json.loads(tui("ls", "--json").stdout)
    assert {t["name"]: t["priority"] for t in listed} == {
        "low": "low",
        "high": "high",
        "crit": "critical",
    }
