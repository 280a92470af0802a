"""What a task refers to of its dependencies — ``{{needs.NAME.FIELD...}}`` in its instructions,
``needs.NAME.FIELD`` in its ``when:`` condition, the names in ``context.from`` — checked at load
against its ``depends_on``, so a typo is an error before anything runs."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tui.model.suggest import did_you_mean

# {{needs.build.result}}, {{ needs.scan.result.files }}, {{needs.scan.result.files.0}}
NEEDS_USE = re.compile(r"\{\{\s*needs\.([^\s{}]*)\s*\}\}")
# What each dependency offers: its parsed result, its state (COMPLETED, SKIPPED, FAILED…),
# the reason it ended so (its error, if it failed), its id and its name.
FIELDS = ("result", "state", "error", "id", "name")
_FIELDS_FIX = ", ".join(f"needs.NAME.{f}" for f in FIELDS)

# Functions a condition may call besides comparing and combining values.
CONDITION_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
}
_CONSTANTS = ("True", "False", "None", "true", "false", "null")
# The syntax a condition may use: values, comparisons, boolean and arithmetic operators,
# `x if c else y`, lookups and the functions above. Anything else is refused at load.
_ALLOWED_NODES = (
    ast.Expression,
    ast.BoolOp,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Attribute,
    ast.Subscript,
    ast.Name,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Load,
    ast.boolop,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
)


@dataclass(frozen=True)
class NeedsRef:
    """One ``{{needs...}}`` in a text: ``name`` (a dependency), ``field`` and JSON keys."""

    text: str
    name: str
    field: str
    keys: tuple[str, ...]


def template_refs(text: str) -> list[NeedsRef]:
    refs = []
    for m in NEEDS_USE.finditer(text):
        parts = m.group(1).split(".")
        field = parts[1] if len(parts) > 1 else ""
        refs.append(NeedsRef(m.group(0), parts[0], field, tuple(parts[2:])))
    return refs


Problem = tuple[str, str]  # (message, fix)


def _name_problem(name: str, deps: Sequence[str], where: str) -> Problem | None:
    if name in deps:
        return None
    guess = did_you_mean(name, list(deps))
    hint = f"did you mean '{guess[0]}'? " if guess else ""
    shown = ", ".join(deps) if deps else "none"
    return (
        f"{where} names '{name}', which is not in this task's depends_on",
        f"{hint}add '{name}' to depends_on, or use one of its dependencies ({shown})",
    )


def _field_problem(field: str, where: str) -> Problem | None:
    if field in FIELDS:
        return None
    guess = did_you_mean(field, list(FIELDS))
    hint = f"did you mean '{guess[0]}'? " if guess else ""
    return (f"{where}: unknown field '{field}'", f"{hint}use {_FIELDS_FIX}")


def template_problems(text: str, deps: Sequence[str]) -> list[Problem]:
    """Problems with the ``{{needs...}}`` in ``text`` (``deps``: depends_on as written)."""
    out = []
    for ref in template_refs(text):
        where = ref.text
        problem = _name_problem(ref.name, deps, where) or _field_problem(ref.field, where)
        if problem is None and ref.keys and ref.field != "result":
            problem = (f"{where}: only result has fields", f"write needs.{ref.name}.{ref.field}")
        if problem is not None:
            out.append(problem)
    return out


def condition_problems(expr: str, deps: Sequence[str], names: Sequence[str] = ()) -> list[Problem]:
    """Problems with a ``when:`` expression (or ``until:``, which also sees ``names``),
    found without evaluating it."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        col = f" at column {e.offset}" if e.offset else ""
        return [
            (
                f"not a valid expression ({e.msg}{col})",
                "write e.g. needs.build.state == 'COMPLETED' and needs.scan.result.count > 0",
            )
        ]
    out: list[Problem] = []
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            out.append(
                (
                    f"{type(node).__name__} expressions are not allowed here",
                    "use comparisons, and/or/not, arithmetic, lookups and "
                    + ", ".join(CONDITION_FUNCTIONS),
                )
            )
        elif isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in CONDITION_FUNCTIONS
        ):
            out.append(
                (
                    f"calls {ast.unparse(node.func)}(), which is not available",
                    f"use only {', '.join(CONDITION_FUNCTIONS)}",
                )
            )
        elif isinstance(node, ast.Name) and node.id not in (
            "needs",
            *names,
            *_CONSTANTS,
            *CONDITION_FUNCTIONS,
        ):
            out.append(
                (
                    f"unknown name '{node.id}'",
                    "refer to dependencies as needs.NAME.state or needs.NAME.result "
                    "(needs['my-task'] for a name with '-'), quote text as 'text'",
                )
            )
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            out.append((f"'{node.attr}' is not allowed", "leave out names starting with _"))
        elif isinstance(node, ast.Attribute | ast.Subscript):
            depth, key = _needs_step(node)
            if depth == 1 and key is not None:
                problem = _name_problem(key, deps, f"needs.{key}")
            elif depth == 2 and key is not None:
                problem = _field_problem(key, _under(node))
            else:
                problem = None
            if problem is not None:
                out.append(problem)
    return out


def _under(node: ast.Attribute | ast.Subscript) -> str:
    return ast.unparse(node.value)


def _needs_step(node: ast.Attribute | ast.Subscript) -> tuple[int, str | None]:
    """How many lookups below ``needs`` this one is (1: the dependency, 2: its field; 0: not
    under needs) and its key when written literally."""
    depth, inner = 1, node.value
    while isinstance(inner, ast.Attribute | ast.Subscript):
        depth, inner = depth + 1, inner.value
    if not (isinstance(inner, ast.Name) and inner.id == "needs"):
        return 0, None
    if isinstance(node, ast.Attribute):
        return depth, node.attr
    key = node.slice
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return depth, key.value
    return depth, None
