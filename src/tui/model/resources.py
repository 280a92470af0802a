"""`resources:` of a task: what it needs of the machine that runs it. The local executor runs
every task on this machine and ignores it; the Ray executor places the task on a node that has
it free (``num_cpus`` and ``memory`` are Ray's own resources, ``custom`` the names a node was
started with, e.g. ``ray start --resources '{"gpu_box": 1}'``) and whose node labels match
``labels`` (``ray start --labels 'zone=eu,box=gpu'``; Ray's ``label_selector``)."""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from tui.model.factories import new_dict

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")
# Ray's own resource names: a `custom:` entry of one of these would be refused by Ray later.
_RAY_BUILTIN = ("CPU", "GPU", "memory", "object_store_memory")
MEMORY_FIX = "write a size such as `2GiB`, `512MiB` or `1.5GB` (or a number of bytes)"
CUSTOM_FIX = (
    "name resources as the nodes were started with them (`ray start --resources`), each a "
    "number >= 0, e.g. `custom: {gpu_box: 1}`; CPUs and memory go in `num_cpus:` and `memory:`"
)
LABELS_FIX = (
    "write the labels the nodes were started with (`ray start --labels 'zone=eu'`) as "
    "`labels: {zone: eu}`: each key and value 1-63 letters, digits, `-`, `_` or `.`, beginning "
    "and ending with a letter or digit (a key may have a `prefix/`)"
)
# Kubernetes label syntax, which Ray's node labels follow (ray._private.label_utils).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?"
_LABEL_VALUE = re.compile(rf"^{_LABEL}$")
_LABEL_KEY = re.compile(rf"^(?:{_LABEL}(?:\.{_LABEL})*/)?{_LABEL}$")


def parse_size(value: Any) -> int:
    """Bytes from ``2GiB``, ``512MiB``, ``1.5GB`` or a whole number of bytes."""
    if isinstance(value, bool):
        raise ValueError(f"resources.memory must be a size; got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"resources.memory must be a size; got {value!r}")
        return int(value)
    m = _SIZE.match(str(value))
    unit = _UNITS.get(m.group(2).lower()) if m else None
    if m is None or unit is None:
        raise ValueError(f"resources.memory must be a size; got {value!r}")
    return int(float(m.group(1)) * unit)


def format_size(n: int) -> str:
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


class Resources(BaseModel):
    model_config = ConfigDict(extra="forbid")

    num_cpus: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    memory: int | None = None  # bytes; written as `2GiB`
    custom: dict[str, float] = Field(default_factory=new_dict)
    # Node labels the node must have, each with this value (exact match).
    labels: dict[str, str] = Field(default_factory=new_dict)

    @field_validator("memory", mode="before")
    @classmethod
    def _parse_memory(cls, value: Any) -> int | None:
        return None if value is None else parse_size(value)

    @field_validator("custom", mode="before")
    @classmethod
    def _check_custom(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(
                f"resources.custom must be a mapping of resource name to amount; got {value!r}"
            )
        for name, amount in value.items():
            if not isinstance(name, str) or not _NAME.match(name):
                raise ValueError(
                    f"resources.custom: {name!r} is not a resource name (letters, digits, "
                    "`_`, `.`, `:` and `-`)"
                )
            if name in _RAY_BUILTIN:
                raise ValueError(
                    f"resources.custom: {name!r} is one of Ray's own resources, not a custom one"
                )
            ok = isinstance(amount, int | float) and not isinstance(amount, bool)
            if not ok or not math.isfinite(amount) or amount < 0:
                raise ValueError(f"resources.custom.{name} must be a number >= 0; got {amount!r}")
        return value

    @field_validator("labels", mode="before")
    @classmethod
    def _check_labels(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"resources.labels must be a mapping of label to value; got {value!r}")
        out: dict[str, str] = {}
        for key, label in value.items():
            if not isinstance(key, str) or len(key) > 317 or not _LABEL_KEY.match(key):
                raise ValueError(f"resources.labels: {key!r} is not a node label name")
            if isinstance(label, int) and not isinstance(label, bool):
                label = str(label)  # `rack: 3` in YAML is the label value "3"
            if not isinstance(label, str) or not _LABEL_VALUE.match(label):
                raise ValueError(f"resources.labels.{key} must be a label value; got {label!r}")
            out[key] = label
        return out

    @field_serializer("memory", when_used="json")
    def _dump_memory(self, value: int | None) -> str | None:
        return None if value is None else format_size(value)

    def ray_options(self) -> dict[str, Any]:
        """The options Ray's ``.options()`` takes for these resources."""
        out: dict[str, Any] = {}
        if self.num_cpus is not None:
            out["num_cpus"] = self.num_cpus
        if self.memory is not None:
            out["memory"] = self.memory
        if self.custom:
            out["resources"] = dict(self.custom)
        if self.labels:
            out["label_selector"] = dict(self.labels)
        return out
