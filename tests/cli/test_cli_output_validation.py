"""output_format's JSON Schema and `validate` command through the real `tui` command: load
errors naming file, line and field, and a kill -9 while a validator runs."""

from __future__ import annotations

import os
import signal

from tests.cli.cli_support import Tui, assert_no_traceback, marker_processes, wait_until

BAD = """\
tasks:
  - name: schema
    output_format:
      type: json
      schema:
        type: object
        properties:
          n: {type: integr}
    agent: {type: shell, instructions: echo 1}
  - name: keep
    output_format: {type: json, on_parse_error: maybe}
    agent: {type: shell, instructions: echo 1}
  - name: good
    output_format:
      type: json
      schema: {type: array, items: {type: string}}
      validate: [python3, check.py]
      on_parse_error: keep
    agent: {type: shell, instructions: echo 1}
"""


def test_bad_schema_and_settings_name_file_line_field_and_fix(tui: Tui) -> None:
    path = tui.dir / "out.yaml"
    path.write_text(BAD)
    res = tui("validate", str(path), db=False)
    assert res.returncode == 2, str(res)
    assert_no_traceback(res)
    err = res.stderr
    assert (
        f"{path}:5: tasks[0].output_format.schema: output_format.schema is not a valid "
        "JSON Schema at properties/n/type: 'integr' is not valid" in err
    ), err
    assert "or a JSON Schema mapping" in err  # the fix
    assert f"{path}:11: tasks[1].output_format.on_parse_error:" in err
    assert "use fail or keep" in err
    assert "good" not in err


VALIDATOR = """\
# {marker}
echo $$ >> {pids}
if [ ! -e {pids}.held ]; then touch {pids}.held; sleep 300; fi
exit 0
"""


def test_kill_9_while_validating_leaves_nothing_and_the_run_is_validated_again(
    tui: Tui,
) -> None:
    # The agent had ended: the next engine adopts its run (from what the keeper left) and
    # validates its result again; the validator cut short is killed, the agent not rerun.
    marker = tui.marker()
    pids = tui.dir / "pids"
    script = tui.dir / "validate.sh"
    script.write_text(VALIDATOR.format(marker=marker, pids=pids))
    task = tui.dir / "v.yaml"
    task.write_text(
        "name: v\n"
        f"output_format: {{type: json, validate: [bash, {script}, {marker}]}}\n"
        "agent: {type: shell, instructions: 'echo 42'}\n"
    )
    run = tui.popen("run", str(task))
    wait_until(lambda: pids.exists() and pids.read_text().strip(), "the validator", proc=run)
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)

    res = tui("run", timeout=120)
    assert res.returncode == 0, str(res)
    [v] = [t for t in tui.by_name().values()]
    assert v["state"] == "COMPLETED" and v["attempts"] == 1 and v["result"] == 42, v
    outcomes = [o for (o,) in tui.sql("SELECT outcome FROM runs ORDER BY id")]
    assert outcomes == ["COMPLETED"]
    assert len(pids.read_text().split()) == 2  # validated twice: the first was cut short
    assert marker_processes(marker) == []  # the first validator was killed by recovery
