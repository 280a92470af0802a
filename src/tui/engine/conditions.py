"""``when:`` conditions, evaluated by simpleeval (a maintained safe evaluator; never ``eval``).

The expression sees ``needs`` (tui.engine.workflow.needs_of) and the functions in
tui.model.needs.CONDITION_FUNCTIONS; its names were checked at load, so what can still go wrong
is data: a result without the field asked for, a comparison of a list with a number.
"""

from __future__ import annotations

from typing import Any

from tui.engine.workflow import WorkflowError
from tui.model.needs import CONDITION_FUNCTIONS

_NAMES = {"true": True, "false": False, "null": None}


def holds(
    expr: str,
    needs: dict[str, dict[str, Any]],
    names: dict[str, Any] | None = None,
    field: str = "when",
) -> bool:
    """Whether ``expr`` is true for these dependencies (and ``names``: ``until:``'s
    ``result`` and ``iteration``); WorkflowError saying why it cannot be evaluated."""
    from simpleeval import EvalWithCompoundTypes, InvalidExpression  # only tasks with when:

    evaluator = EvalWithCompoundTypes(
        names={"needs": needs, **(names or {}), **_NAMES}, functions=dict(CONDITION_FUNCTIONS)
    )
    try:
        return bool(evaluator.eval(expr.strip()))
    except InvalidExpression as e:
        raise WorkflowError(f"{field}: {e}") from None
    except (TypeError, ValueError, KeyError, IndexError, ArithmeticError) as e:
        raise WorkflowError(f"{field}: {type(e).__name__}: {e}") from None
