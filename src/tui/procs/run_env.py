"""A run's environment as what it is made of: the engine's own environment, shared by every
run, and the few variables the run sets over it.

It is a plain ``dict`` to whoever reads it (an adapter, ``subprocess``). Who knows the layers
can skip the work a whole environment costs: the keeper is told only what differs from the
environment it was started with, and a check of every name (``tui.agents.direct_exec``) is
made once for the shared part. Each was a pass over all ~50 variables a run (~5 µs each). A
change made to it in place forgets the layers: it is then an ordinary dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class RunEnv(dict[str, str]):
    """``base`` with ``own`` set over it (``own`` None once it was changed in place)."""

    __slots__ = ("base", "own")

    def __init__(self, base: Mapping[str, str], own: dict[str, str]) -> None:
        super().__init__(base)
        dict.update(self, own)
        self.base: Mapping[str, str] = base
        self.own: dict[str, str] | None = own

    def over(self, changes: dict[str, str]) -> RunEnv:
        """A copy with ``changes`` set too, its layers kept when it has them."""
        if self.own is None:
            out = RunEnv(self, {})
            out.own = None
            dict.update(out, changes)
            return out
        return RunEnv(self.base, {**self.own, **changes})

    def _changed(self) -> None:
        self.own = None

    def __setitem__(self, key: str, value: str) -> None:
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._changed()
        super().__delitem__(key)

    def __ior__(self, other: Any) -> RunEnv:  # type: ignore[override,misc]
        self._changed()
        dict.update(self, other)
        return self

    def update(self, *args: Any, **kwargs: str) -> None:
        self._changed()
        super().update(*args, **kwargs)

    def pop(self, key: str, *default: Any) -> Any:
        self._changed()
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, str]:
        self._changed()
        return super().popitem()

    def setdefault(self, key: str, default: str = "") -> str:
        self._changed()
        return super().setdefault(key, default)

    def clear(self) -> None:
        self._changed()
        super().clear()


def layers(env: Mapping[str, str] | None) -> tuple[Mapping[str, str], dict[str, str]] | None:
    """(base, own) when ``env`` still is the base with its own variables over it."""
    if type(env) is RunEnv and env.own is not None:
        return env.base, env.own
    return None
