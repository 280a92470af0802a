"""``output_format`` on a task: the agent's final result is parsed and checked, so a task that
promised JSON of a shape fails (and is retried) when it does not deliver it."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tui.model.choices import one_of

OUTPUT_TYPES = ("json", "text")
SCHEMAS = ("object", "array", "string[]", "number", "boolean")
# Agents often wrap JSON in a Markdown fence; the last fenced block is the answer.
_FENCE = re.compile(r"```[a-zA-Z]*\n(.*?)```", re.DOTALL)


class OutputFormatError(ValueError):
    pass


class OutputFormat(BaseModel):
    # Written `schema`, a name BaseModel already uses: hence the alias.
    model_config = ConfigDict(extra="forbid", validate_by_name=True, serialize_by_alias=True)

    type: str = "text"
    schema_: str = Field(default="", alias="schema")  # "" = any JSON value

    @field_validator("type", mode="before")
    @classmethod
    def _check_type(cls, value: Any) -> Any:
        return one_of("output_format.type", value, OUTPUT_TYPES, optional=False)

    @field_validator("schema_", mode="before")
    @classmethod
    def _check_schema(cls, value: Any) -> Any:
        return one_of("output_format.schema", value, ("", *SCHEMAS), optional=True)

    @model_validator(mode="after")
    def _schema_needs_json(self) -> OutputFormat:
        if self.schema_ and self.type != "json":
            raise ValueError("output_format.schema needs type: json")
        return self


def parse_output(fmt: OutputFormat, text: str | None) -> Any:
    """The parsed result; OutputFormatError saying what was wrong with it."""
    text = (text or "").strip()
    if fmt.type == "text":
        return text
    fenced = _FENCE.findall(text)
    body = fenced[-1].strip() if fenced else text
    if not body:
        raise OutputFormatError("expected JSON, got no output")
    try:
        value = json.loads(body)
    except json.JSONDecodeError as e:
        raise OutputFormatError(f"result is not JSON ({e.msg} at line {e.lineno})") from None
    if fmt.schema_ and not _matches(fmt.schema_, value):
        raise OutputFormatError(f"expected {_NAMES[fmt.schema_]}, got {_describe(value)}")
    return value


_NAMES = {
    "object": "a JSON object",
    "array": "a JSON array",
    "string[]": "a JSON array of strings",
    "number": "a number",
    "boolean": "true or false",
}


def _matches(schema: str, value: Any) -> bool:
    if schema == "object":
        return isinstance(value, dict)
    if schema == "array":
        return isinstance(value, list)
    if schema == "string[]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if schema == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, bool)


def _describe(value: Any) -> str:
    shown = json.dumps(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
