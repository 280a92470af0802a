"""Fuzzing every input file tui reads: generated from grammars of valid input, then mutated;
each case is a clear error or valid tasks, never a traceback (bounded examples: fast)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.grammars import CHECKS

FUZZ = settings(
    max_examples=200,
    deadline=None,  # a shared 2-core machine: time is checked by the limit tests instead
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)


@pytest.mark.parametrize("kind", list(CHECKS))
def test_input_files_never_crash(kind: str) -> None:
    cases, check = CHECKS[kind]

    @FUZZ
    @given(text=cases)
    def one(text: str) -> None:
        assert check(text) in ("valid", "error")

    one()
