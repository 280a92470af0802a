"""Template variables: declared with a name, type, default and whether required; used as
``{{name}}``; given values under ``vars:``. Every problem is found at load, before any run."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from math import isfinite
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from tui.model.choices import one_of
from tui.model.suggest import did_you_mean

VAR_TYPES = ("string", "number", "boolean")
VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
USE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class Variable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    type: str = "string"
    default: str | float | bool | None = None
    required: bool = False
    description: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not VAR_NAME.match(value):
            raise ValueError(f"variable name {value!r} must be letters, digits and _")
        return value

    @field_validator("type", mode="before")
    @classmethod
    def _check_type(cls, value: Any) -> Any:
        return one_of("type", value, VAR_TYPES, optional=False)


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":  # finite: inf/nan would be stored as null and not read back
        return isinstance(value, int | float) and not isinstance(value, bool) and isfinite(value)
    return isinstance(value, str)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def resolve(
    declared: Sequence[Variable], given: Mapping[str, Any]
) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """(name -> text, problems as (field, message, fix)). Later declarations of a name shadow
    earlier ones (a task's over its file's)."""
    by_name = {v.name: v for v in declared}
    values: dict[str, str] = {}
    problems: list[tuple[str, str, str]] = []
    for name in given:
        if name not in by_name:
            guess = did_you_mean(name, list(by_name))
            hint = f"did you mean `{guess[0]}`? " if guess else ""
            fix = f"{hint}declare it under `variables:`, or remove it"
            problems.append((f"vars.{name}", f"unknown variable '{name}'", fix))
    for name, var in by_name.items():
        value = given.get(name, var.default)
        if value is None:
            if var.required:
                fix = f"give it under `vars:` ({name}: ...), or a default"
                problems.append((f"vars.{name}", f"variable '{name}' is required", fix))
            values[name] = ""
            continue
        if not _type_ok(var.type, value):
            fix = f"give a {var.type}"
            problems.append((f"vars.{name}", f"{name} must be a {var.type}; got {value!r}", fix))
            continue
        values[name] = _text(value)
    return values, problems


def unknown_uses(text: str, declared: Sequence[Variable]) -> list[str]:
    names = {v.name for v in declared}
    return [m.group(1) for m in USE.finditer(text) if m.group(1) not in names]


def fill(text: str, values: Mapping[str, str]) -> str:
    """``{{name}}`` -> its value, in one pass (a value's own braces stay as they are)."""
    return USE.sub(lambda m: values.get(m.group(1), m.group(0)), text)
