"""The executor the configuration asks for: ``[executor]``, or ``--executor`` on the command
line. The Ray executor (and ``ray`` itself) is imported only when it is chosen."""

from __future__ import annotations

from pathlib import Path

from tui.config.load import ConfigError, load_executor
from tui.config.schema import EXECUTOR_KINDS, ExecutorSettings
from tui.engine.errors import EngineError
from tui.engine.runner import Executor


class ExecutorUnavailable(EngineError):
    """The chosen executor cannot be used here (e.g. Ray is not installed)."""


def executor_settings(kind: str | None = None, project_dir: Path | None = None) -> ExecutorSettings:
    """The merged [executor] section, ``kind`` (a command-line flag) winning."""
    settings, issues = load_executor(project_dir)
    if issues:
        raise ConfigError(issues)
    if kind is not None:
        if kind not in EXECUTOR_KINDS:
            raise ExecutorUnavailable(
                f"--executor must be one of {', '.join(EXECUTOR_KINDS)}; got {kind!r}"
            )
        settings = settings.model_copy(update={"kind": kind})
    return settings


def make_executor(settings: ExecutorSettings) -> Executor | None:
    """The executor for ``settings``; None for the engine's own local one."""
    if settings.kind != "ray":
        return None
    import importlib.util

    from tui.engine.ray_executor import RAY_MISSING, RayExecutor

    # Refused now, with how to install it, rather than at the first task. Only looked for:
    # `ray` itself is imported by the Ray driver process, never by the engine's.
    if importlib.util.find_spec("ray") is None:
        raise ExecutorUnavailable(f'[executor] kind = "ray": {RAY_MISSING}')
    return RayExecutor(settings.address, forward_env=settings.forward_env)
