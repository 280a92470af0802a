"""output_format with a JSON Schema, a `validate` command, and on_parse_error: keep — real
shell tasks and real validator processes through the engine."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import shell_task
from tui.engine.scheduler import Engine
from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text
from tui.model.output_format import OutputFormat, OutputFormatError, parse_output
from tui.model.states import State
from tui.store.db import Store

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"],
}


def fmt(**fields: object) -> OutputFormat:
    return OutputFormat.model_validate({"type": "json", **fields})


def test_a_json_schema_accepts_what_matches_and_says_where_it_does_not() -> None:
    assert parse_output(fmt(schema=PERSON), '{"name": "Ada", "age": 36}') == {
        "name": "Ada",
        "age": 36,
    }
    with pytest.raises(OutputFormatError, match=r"at result\.age: -1 is less than the minimum"):
        parse_output(fmt(schema=PERSON), '{"name": "Ada", "age": -1}')
    with pytest.raises(OutputFormatError, match="'name' is a required property"):
        parse_output(fmt(schema=PERSON), "{}")
    items = {"type": "array", "items": {"type": "string"}}
    with pytest.raises(OutputFormatError, match=r"at result\[1\]: 2 is not of type 'string'"):
        parse_output(fmt(schema=items), '["a", 2]')


def test_the_coarse_types_stay_and_brackets_mean_an_array() -> None:
    assert parse_output(fmt(schema="[]"), "[1, 2]") == [1, 2]
    with pytest.raises(OutputFormatError, match="expected a JSON array, got"):
        parse_output(fmt(schema="[]"), '{"a": 1}')


@pytest.mark.parametrize(
    ("yaml_fmt", "expected"),
    [
        (
            "{type: json, schema: {type: objekt}}",
            "output_format.schema is not a valid JSON Schema at type: 'objekt' is not valid",
        ),
        ("{type: text, schema: {type: object}}", "output_format.schema needs type: json"),
        ("{type: json, on_parse_error: ignore}", "on_parse_error must be one of fail, keep"),
        ("{type: text, on_parse_error: keep}", "on_parse_error needs type: json"),
        ("{type: json, validate: [1, 2]}", "validate must be a list of strings"),
        ("{type: json, validate: 'check \"open'}", "cannot be split into words"),
        ("{type: json, validate: [x], validate_timeout: 2h}", "at most 1h"),
    ],
)
def test_bad_settings_are_load_errors(yaml_fmt: str, expected: str) -> None:
    text = f"name: t\noutput_format: {yaml_fmt}\nagent: {{type: shell, instructions: 'true'}}\n"
    with pytest.raises(TaskFileError) as e:
        load_task_text(text, "t.yaml")
    assert expected in str(e.value)


def test_a_string_command_is_split_once_never_given_to_a_shell() -> None:
    f = fmt(validate="python3 -c 'import sys; sys.exit(0)'")
    assert f.validate_ == ["python3", "-c", "import sys; sys.exit(0)"]


async def run_one(store: Store, script: str, **output_format: object) -> tuple[Engine, str]:
    t = shell_task("v", script, output_format={"type": "json", **output_format})
    async with Engine(store) as engine:
        await engine.submit([t])
        await engine.wait_settled([t.id])
    return engine, t.id


def checker(tmp_path: Path, body: str) -> list[str]:
    """A validator script: Python reading the result from stdin."""
    path = tmp_path / "check.py"
    path.write_text("import json, os, sys\ndata = sys.stdin.read()\n" + body)
    return [sys.executable, str(path)]


async def test_validate_gets_the_result_on_stdin_and_its_exit_code_decides(
    store: Store, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.json"
    argv = checker(
        tmp_path,
        f"open({str(seen)!r}, 'w').write(data)\n"
        "value = json.loads(data)\n"
        "print('checked', value['n'])\n"
        "sys.exit(0 if value['n'] > 1 else 3)\n",
    )
    # The result carries shell syntax: it reaches the validator as data, nothing runs it.
    _, good = await run_one(
        store, 'echo \'{"n": 2, "s": "$(touch pwned)"}\'', schema="object", validate=argv
    )
    rec = await store.get_task(good)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    assert json.loads(seen.read_text()) == {"n": 2, "s": "$(touch pwned)"}
    assert rec.parsed_result == {"n": 2, "s": "$(touch pwned)"}
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()

    _, bad = await run_one(store, "echo '{\"n\": 1}'", validate=argv)
    rec = await store.get_task(bad)
    assert rec is not None and rec.state == State.FAILED
    name = os.path.basename(sys.executable)
    assert rec.reason == f"validate: {name} rejected the result (exit code 3): checked 1"
    assert rec.parsed_result is None
    lines = [ln.text for ln in await store.read_output(bad)]
    assert "[validate] checked 1" in lines


async def test_a_rejection_is_retried(store: Store, tmp_path: Path) -> None:
    argv = checker(tmp_path, "sys.exit(0 if json.loads(data) == 2 else 1)\n")
    t = shell_task(
        "r",
        'echo "$TUI_ATTEMPT"',
        output_format={"type": "json", "validate": argv},
        retry={"max_attempts": 2, "delay": "10ms"},
    )
    async with Engine(store) as engine:
        await engine.submit([t])
        await engine.wait_settled([t.id])
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.COMPLETED and rec.attempts == 2
    assert rec.parsed_result == 2


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


async def test_a_validator_past_its_timeout_is_killed_with_its_group(
    store: Store, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    script = tmp_path / "slow.sh"
    script.write_text(f"sleep 300 &\necho $$ $! > {pids}\nwait\n")
    _, tid = await run_one(
        store, "echo 1", validate=["bash", str(script)], validate_timeout="300ms"
    )
    rec = await store.get_task(tid)
    assert rec is not None and rec.state == State.FAILED
    assert rec.reason == "validate: bash gave no verdict within 300ms"
    assert not any(alive(int(p)) for p in pids.read_text().split())


async def test_what_an_accepting_validator_leaves_running_is_ended(
    store: Store, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    script = tmp_path / "quick.sh"
    script.write_text(f"sleep 300 &\necho $! > {pids}\nexit 0\n")
    _, tid = await run_one(store, "echo 1", validate=["bash", str(script)])
    rec = await store.get_task(tid)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    assert not alive(int(pids.read_text()))


async def test_a_validator_that_cannot_run_fails_the_attempt(store: Store) -> None:
    _, tid = await run_one(store, "echo 1", validate=["/no/such/checker"])
    rec = await store.get_task(tid)
    assert rec is not None and rec.state == State.FAILED
    assert rec.reason.startswith("validate: cannot run '/no/such/checker'")


async def test_keep_stores_the_raw_text_and_the_parse_error_as_a_note(store: Store) -> None:
    _, tid = await run_one(store, "echo 'no JSON today'", schema="object", on_parse_error="keep")
    rec = await store.get_task(tid)
    assert rec is not None and rec.state == State.COMPLETED
    assert rec.parsed_result == "no JSON today"
    assert rec.reason.startswith("output_format: result is not JSON")
    assert rec.reason.endswith("kept the raw text (on_parse_error: keep)")
    notes = [e for e in await store.read_events() if e.kind == "note" and e.task_id == tid]
    assert [n.data["note"] for n in notes] == [rec.reason]
    # JSON that parses is still checked against the schema: keep is for parse errors only.
    _, tid = await run_one(store, "echo '[1]'", schema="object", on_parse_error="keep")
    rec = await store.get_task(tid)
    assert rec is not None and rec.state == State.FAILED


async def test_fail_is_the_default(store: Store) -> None:
    _, tid = await run_one(store, "echo 'no JSON today'")
    rec = await store.get_task(tid)
    assert rec is not None and rec.state == State.FAILED
    assert "result is not JSON" in rec.reason
