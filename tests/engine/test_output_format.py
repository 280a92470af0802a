"""output_format: a task's result is parsed and checked; a mismatch fails the attempt."""

from __future__ import annotations

import pytest

from tests.conftest import shell_task
from tui.engine.scheduler import Engine
from tui.model.issues import TaskFileError
from tui.model.loader import load_task_text
from tui.model.output_format import OutputFormat, OutputFormatError, parse_output
from tui.model.states import State
from tui.store.db import Store


def fmt(schema: str = "", type_: str = "json") -> OutputFormat:
    return OutputFormat.model_validate({"type": type_, "schema": schema})


@pytest.mark.parametrize(
    ("schema", "text", "value"),
    [
        ("object", '{"a": [1]}', {"a": [1]}),
        ("array", '[1, "x"]', [1, "x"]),
        ("string[]", '["a", "b"]', ["a", "b"]),
        ("string[]", "[]", []),
        ("number", "3.5", 3.5),
        ("boolean", "false", False),
        ("", "null", None),
        ("object", 'Here it is:\n```json\n{"ok": true}\n```\nDone.', {"ok": True}),
    ],
)
def test_matching_results_parse(schema: str, text: str, value: object) -> None:
    assert parse_output(fmt(schema), text) == value


@pytest.mark.parametrize(
    ("schema", "text", "message"),
    [
        ("object", "", "expected JSON, got no output"),
        ("object", "{oops", "result is not JSON"),
        ("object", "[1]", "expected a JSON object, got [1]"),
        ("string[]", '["a", 2]', 'expected a JSON array of strings, got ["a", 2]'),
        ("number", "true", "expected a number, got true"),
        ("boolean", "1", "expected true or false, got 1"),
    ],
)
def test_mismatches_say_what_was_wrong(schema: str, text: str, message: str) -> None:
    with pytest.raises(OutputFormatError, match=message.replace("[", r"\[")):
        parse_output(fmt(schema), text)


def test_text_keeps_the_result_as_is() -> None:
    assert parse_output(fmt(type_="text"), "  some words\n") == "some words"


@pytest.mark.parametrize(
    ("yaml_fmt", "expected"),
    [
        ("{type: xml}", "output_format.type must be one of json, text"),
        ("{type: text, schema: object}", "output_format.schema needs type: json"),
        ("{type: json, schema: map}", "output_format.schema must be one of"),
        ("{type: json, schem: object}", "did you mean `schema`?"),
    ],
)
def test_bad_output_format_is_a_load_error(yaml_fmt: str, expected: str) -> None:
    text = f"name: t\noutput_format: {yaml_fmt}\nagent: {{type: shell, instructions: 'true'}}\n"
    with pytest.raises(TaskFileError) as e:
        load_task_text(text, "t.yaml")
    assert expected in str(e.value)


async def test_parsed_result_is_stored_with_the_task(store: Store) -> None:
    t = shell_task(
        "j",
        "echo 'thinking...'; echo '```json'; echo '{\"n\": 2}'; echo '```'",
        output_format={"type": "json", "schema": "object"},
    )
    async with Engine(store) as engine:
        await engine.submit([t])
        await engine.wait_settled([t.id])
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.COMPLETED
    assert rec.parsed_result == {"n": 2}
    assert rec.to_json()["result"] == {"n": 2}


async def test_a_mismatch_fails_the_attempt_and_retry_applies(store: Store) -> None:
    # The first attempt prints prose, the second the promised list.
    script = 'if [ "$TUI_ATTEMPT" = 1 ]; then echo "no list today"; else echo \'["a"]\'; fi'
    t = shell_task(
        "r",
        script,
        output_format={"type": "json", "schema": "string[]"},
        retry={"max_attempts": 2, "delay": "10ms"},
    )
    async with Engine(store) as engine:
        await engine.submit([t])
        await engine.wait_settled([t.id])
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.COMPLETED and rec.attempts == 2
    assert rec.parsed_result == ["a"]
    reasons = [r for _, _, to, r, _ in await store.transitions(t.id) if to == "FAILED"]
    assert len(reasons) == 1 and "output_format: result is not JSON" in reasons[0]


async def test_a_mismatch_on_the_last_attempt_fails_the_task(store: Store) -> None:
    t = shell_task("n", "echo '[1, 2]'", output_format={"type": "json", "schema": "string[]"})
    async with Engine(store) as engine:
        await engine.submit([t])
        await engine.wait_settled([t.id])
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.FAILED
    assert "expected a JSON array of strings, got [1, 2]" in rec.reason
    assert rec.parsed_result is None
