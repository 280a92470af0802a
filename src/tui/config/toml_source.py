"""Read a TOML file within tui's input limits: bounded size, nesting and numbers, and every
failure a message with a line (tomllib alone recurses into deep nesting and accepts integers
of any size, which raise far from the file)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tui.model.limits import MAX_DEPTH, UnreadableInput, read_bounded

INT_MAX = 2**63 - 1  # TOML integers are 64-bit; tomllib does not check


class TomlProblem(Exception):
    def __init__(self, message: str, line: int | None, fix: str) -> None:
        super().__init__(message)
        self.message, self.line, self.fix = message, line, fix


def read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """(text, data) of ``path``; FileNotFoundError passes through, all else is TomlProblem."""
    try:
        text = read_bounded(str(path)).decode("utf-8")
    except FileNotFoundError:
        raise
    except UnicodeDecodeError:
        raise TomlProblem("cannot read: not UTF-8 text", None, "save it as UTF-8") from None
    except UnreadableInput as e:
        raise TomlProblem(str(e), None, e.fix) from None
    except OSError as e:
        raise TomlProblem(f"cannot read: {e}", None, "check the file") from None
    import tomllib  # only when a config file exists (~1.5 ms of `tui run` without one)

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line = re.search(r"line (\d+)", str(e))
        raise TomlProblem(
            f"invalid TOML: {e}",
            int(line.group(1)) if line else None,
            'check quotes, brackets and `key = "value"` syntax there',
        ) from None
    except RecursionError:
        raise TomlProblem("nested too deeply", None, "flatten the arrays and tables") from None
    except ValueError:  # Python's limit on digits in one integer
        raise TomlProblem(
            "a number of thousands of digits", None, "write a sensible number"
        ) from None
    _check(data)
    return text, data


def _check(data: dict[str, Any]) -> None:
    """Depth and integer range, walked without recursion."""
    todo: list[tuple[Any, str, int]] = [(data, "", 0)]
    while todo:
        value, where, depth = todo.pop()
        if depth > MAX_DEPTH:
            shown = where if len(where) <= 60 else where[:60] + "…"
            raise TomlProblem(
                f"{shown} is nested more than {MAX_DEPTH} levels deep", None, "flatten it"
            )
        if isinstance(value, dict):
            todo += [(v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in value.items()]
        elif isinstance(value, list):
            todo += [(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT_MAX:
            raise TomlProblem(
                f"{where}: integer larger than TOML allows (64-bit)", None, "use a smaller number"
            )
