"""Helpers shared by the benchmarks: paths, timing, medians, the go-task binary."""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
TUI = VENV_BIN / "tui"
GO_TASK_VERSION = "3.54.0"
DOIT_VERSION = "0.37.0"


def tui_argv() -> list[str]:
    """`tui` from the venv; `python -m tui` when the console script is not installed."""
    return [str(TUI)] if TUI.exists() else [sys.executable, "-m", "tui"]


class Timing(NamedTuple):
    wall: float  # seconds
    cpu: float  # user + system seconds of the command and every process it waited for


def timed(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    stdin: Any = subprocess.DEVNULL,
) -> float:
    """Wall seconds of one run of ``argv``; its stderr is shown only if it fails."""
    return run_timed(argv, cwd=cwd, env=env, check=check, stdin=stdin).wall


def run_timed(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    stdin: Any = subprocess.DEVNULL,
) -> Timing:
    """Wall and CPU seconds of one run of ``argv``. On a busy machine the CPU time moves much
    less than the wall time: a runner of one busy process gets one share of the cores, one of
    eight worker processes gets eight."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if check and proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace")[-4000:])
        raise SystemExit(f"benchmark command failed ({proc.returncode}): {' '.join(argv)}")
    return Timing(wall, cpu)


def repeat_median(runs: int, once: Callable[[int], float], label: str) -> tuple[float, list]:
    """Call ``once(i)`` ``runs`` times; return the median and every sample."""
    samples: list[float] = []
    for i in range(runs):
        s = once(i)
        samples.append(s)
        print(f"  {label:<34} run {i + 1}/{runs}: {s:8.3f} s", file=sys.stderr, flush=True)
    return statistics.median(samples), samples


def go_task_binary(install: bool = True) -> Path | None:
    """The `task` binary from PyPI's go-task-bin, installed into this venv when missing."""
    cand = VENV_BIN / "task"
    if not (cand.exists() and _is_version(cand)) and install:
        print(f"installing go-task-bin=={GO_TASK_VERSION} into {VENV_BIN.parent}", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", f"go-task-bin=={GO_TASK_VERSION}"],
            check=False,
        )
    if cand.exists():
        return cand
    found = shutil.which("task")
    return Path(found) if found else None


def doit_binary(install: bool = True) -> Path | None:
    """`doit` from PyPI, installed into this venv when missing (a benchmark tool only: it is
    no dependency of tui)."""
    cand = VENV_BIN / "doit"
    if not (cand.exists() and _version_of(cand) == DOIT_VERSION) and install:
        print(f"installing doit=={DOIT_VERSION} into {VENV_BIN.parent}", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", f"doit=={DOIT_VERSION}"], check=False
        )
    return cand if cand.exists() else None


def _version_of(binary: Path) -> str:
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    except OSError:
        return ""
    return out.stdout.split("\n", 1)[0].strip()


def _is_version(task_bin: Path) -> bool:
    try:
        out = subprocess.run(
            [str(task_bin), "--version"], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return False
    return GO_TASK_VERSION in out


def task_version(task_bin: Path) -> str:
    out = subprocess.run([str(task_bin), "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "?"


def write_json(path: str | None, data: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2) + "\n")


def machine() -> str:
    return f"{os.cpu_count()} cpu(s), Python {sys.version.split()[0]}"
