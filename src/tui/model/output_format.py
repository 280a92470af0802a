"""``output_format`` on a task: the agent's final result is parsed and checked, so a task that
promised JSON of a shape fails (and is retried) when it does not deliver it.

``schema`` is a coarse type (``object``, ``[]``...) or a whole JSON Schema, checked with the
``jsonschema`` library (the reference implementation; its ``referencing`` never fetches a
remote ``$ref``). ``validate`` is a command run on the result (engine/validation.py)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from tui.model.choices import one_of
from tui.model.duration import format_duration, parse_duration
from tui.model.factories import new_list
from tui.model.workflow import CUT_NOTE

OUTPUT_TYPES = ("json", "text")
SCHEMAS = ("object", "array", "[]", "string[]", "number", "boolean")
ON_PARSE_ERROR = ("fail", "keep")
VALIDATE_TIMEOUT = 60.0  # seconds a `validate` command may take, unless the task says
MAX_VALIDATE_TIMEOUT = 3600.0
KEPT = "kept the raw text (on_parse_error: keep)"  # ends a completed task's note
# Agents often wrap JSON in a Markdown fence; the last fenced block is the answer.
_FENCE = re.compile(r"```[a-zA-Z]*\n(.*?)```", re.DOTALL)


class OutputFormatError(ValueError):
    pass


class OutputFormat(BaseModel):
    # Written `schema`, a name BaseModel already uses: hence the alias.
    model_config = ConfigDict(extra="forbid", validate_by_name=True, serialize_by_alias=True)

    type: str = "text"
    # "" = any JSON value; a coarse type; or a JSON Schema (a mapping).
    schema_: str | dict[str, Any] = Field(default="", alias="schema")
    # A command (argv; a string is split as a shell would, never run by one) that gets the
    # result on stdin: exit 0 accepts it, anything else fails the attempt.
    validate_: list[str] = Field(default_factory=new_list, alias="validate")
    validate_timeout: float = VALIDATE_TIMEOUT
    # A result that is not JSON: fail the attempt, or keep the raw text with a note.
    on_parse_error: str = "fail"

    @field_validator("type", mode="before")
    @classmethod
    def _check_type(cls, value: Any) -> Any:
        return one_of("output_format.type", value, OUTPUT_TYPES, optional=False)

    @field_validator("schema_", mode="before")
    @classmethod
    def _check_schema(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return check_json_schema(value)
        return one_of("output_format.schema", value, ("", *SCHEMAS), optional=True)

    @field_validator("validate_", mode="before")
    @classmethod
    def _split_validate(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as e:
                raise ValueError(
                    f"output_format.validate cannot be split into words: {e}"
                ) from None
        if isinstance(value, list) and value and not all(isinstance(v, str) for v in value):
            raise ValueError("output_format.validate must be a list of strings (the argv)")
        if isinstance(value, list) and value and not value[0].strip():
            raise ValueError("output_format.validate names no command")
        return value

    @field_validator("validate_timeout", mode="before")
    @classmethod
    def _parse_timeout(cls, value: Any) -> float:
        seconds = parse_duration(value)
        if not 0 < seconds <= MAX_VALIDATE_TIMEOUT:
            raise ValueError(
                f"output_format.validate_timeout must be more than 0 and at most 1h; "
                f"got {format_duration(seconds)}"
            )
        return seconds

    @field_validator("on_parse_error", mode="before")
    @classmethod
    def _check_on_parse_error(cls, value: Any) -> Any:
        return one_of("output_format.on_parse_error", value, ON_PARSE_ERROR, optional=False)

    @field_serializer("validate_timeout", when_used="json")
    def _dump_timeout(self, value: float) -> str:
        return format_duration(value)

    @model_validator(mode="after")
    def _schema_needs_json(self) -> OutputFormat:
        if self.schema_ and self.type != "json":
            raise ValueError("output_format.schema needs type: json")
        if self.on_parse_error == "keep" and self.type != "json":
            raise ValueError("output_format.on_parse_error needs type: json (text always parses)")
        return self


def check_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` if it is a valid JSON Schema (of its ``$schema`` draft, else 2020-12)."""
    import jsonschema  # ~40 ms: only files with a schema pay it, not every `tui` start

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        at = f" at {where}" if where else ""
        raise ValueError(
            f"output_format.schema is not a valid JSON Schema{at}: {e.message}"
        ) from None
    return schema


@dataclass
class Parsed:
    """A result as stored: the value, and the parse error when the raw text was kept."""

    value: Any = None
    kept_error: str = ""


def parse_output(fmt: OutputFormat, text: str | None) -> Any:
    """The parsed result; OutputFormatError saying what was wrong with it."""
    return parse_result(fmt, text).value


def parse_result(fmt: OutputFormat, text: str | None) -> Parsed:
    """The parsed and checked result; with ``on_parse_error: keep``, text that is not JSON
    is kept as it is, with the error. OutputFormatError saying what was wrong otherwise."""
    text = (text or "").strip()
    if fmt.type == "text":
        return Parsed(value=text)
    fenced = _FENCE.findall(text)
    body = fenced[-1].strip() if fenced else text
    try:
        if not body:
            raise OutputFormatError("expected JSON, got no output")
        try:
            value = json.loads(body)
        except json.JSONDecodeError as e:
            cut = f"; {CUT_NOTE}" if body.startswith("…") else ""
            raise OutputFormatError(
                f"result is not JSON ({e.msg} at line {e.lineno}){cut}"
            ) from None
    except OutputFormatError as e:
        if fmt.on_parse_error == "keep":
            return Parsed(value=text, kept_error=str(e))
        raise
    if isinstance(fmt.schema_, dict):
        _check_against(fmt.schema_, value)
    elif fmt.schema_ and not _matches(fmt.schema_, value):
        raise OutputFormatError(f"expected {_NAMES[fmt.schema_]}, got {_describe(value)}")
    return Parsed(value=value)


def _check_against(schema: dict[str, Any], value: Any) -> None:
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    if error is not None:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        at = f" at result{where}" if where else ""
        message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
        raise OutputFormatError(f"result does not match the schema{at}: {message}")


_NAMES = {
    "object": "a JSON object",
    "array": "a JSON array",
    "[]": "a JSON array",
    "string[]": "a JSON array of strings",
    "number": "a number",
    "boolean": "true or false",
}


def _matches(schema: str, value: Any) -> bool:
    if schema == "object":
        return isinstance(value, dict)
    if schema in ("array", "[]"):
        return isinstance(value, list)
    if schema == "string[]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if schema == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, bool)


def _describe(value: Any) -> str:
    shown = json.dumps(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
