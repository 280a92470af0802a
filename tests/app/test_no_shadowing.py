"""Our widgets and app never overwrite Textual's own private attributes.

``TuiApp`` once set ``self._log``, which is Textual's logger: under ``textual run --dev``
every ``self.log(...)`` then raised. Any private name we assign on ``self`` must be ours.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

APP_DIR = Path(__file__).resolve().parents[2] / "src" / "tui" / "app"


def _assigned_on_self(cls: ast.ClassDef) -> set[str]:
    names = set()
    for node in ast.walk(cls):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for t in targets:
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
            ):
                names.add(t.attr)
    return names


def _classes() -> list[tuple[str, type, set[str]]]:
    found = []
    for path in sorted(APP_DIR.rglob("*.py")):
        module = importlib.import_module(
            "tui." + ".".join(path.relative_to(APP_DIR.parent).with_suffix("").parts)
        )
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and isinstance(
                getattr(module, node.name, None), type
            ):
                found.append(
                    (
                        f"{path.name}:{node.name}",
                        getattr(module, node.name),
                        _assigned_on_self(node),
                    )
                )
    return found


@pytest.mark.parametrize(
    "where,cls,names", _classes(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_private_attributes_are_ours(where: str, cls: type, names: set[str]) -> None:
    textual = [b for b in inspect.getmro(cls) if b.__module__.startswith("textual")]
    if not textual:
        return
    base = textual[0]
    try:
        bare = vars(base())  # what Textual's own __init__ sets
    except TypeError:
        bare = {}
    clashes = sorted(n for n in names if n.startswith("_") and (hasattr(base, n) or n in bare))
    assert not clashes, f"{where} overwrites {base.__name__}'s {clashes}"
