"""`tui doctor`: is everything tui needs in order? Exit 0 when nothing is wrong (warnings are
printed but do not fail it: a script checking a setup should not break on advice), 1 on any
error. Each check reports (level, subject, text) lines; more checks join ``CHECKS``."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the rest is imported when doctor runs, not at every `tui` start
    from tui.config.merged import Config
    from tui.config.schema import Settings

Level = Literal["ok", "warning", "error"]
VERSION_TIMEOUT = 20.0  # seconds for `CLI --version` (node CLIs start slowly on a busy box)


@dataclass
class Report:
    lines: list[tuple[Level, str, str]] = field(default_factory=list)

    def add(self, level: Level, subject: str, text: str) -> None:
        self.lines.append((level, subject, text))

    def count(self, level: Level) -> int:
        return sum(lv == level for lv, _, _ in self.lines)


@dataclass
class Setup:
    args: argparse.Namespace
    settings: Settings
    config: Config | None  # None when the config has errors


Check = Callable[[Setup, Report], Awaitable[None]]


def add_parsers(sub: argparse._SubParsersAction, db: argparse.ArgumentParser) -> None:
    p = sub.add_parser("doctor", parents=[db], help="check config, agents and database")
    p.set_defaults(handler=cmd_doctor)


async def cmd_doctor(args: argparse.Namespace) -> int:
    from tui.config.load import ConfigError, load_settings
    from tui.config.merged import load_config

    report = Report()
    settings, _ = load_settings()
    try:
        config: Config | None = load_config()
    except ConfigError as e:
        config = None
        for issue in e.issues:
            report.add("error", "config", str(issue))
    setup = Setup(args, settings, config)
    for check in CHECKS:
        await check(setup, report)
    for level, subject, text in report.lines:
        print(f"{level:<8}{subject:<14}{text}")
    errors, warnings = report.count("error"), report.count("warning")
    if errors:
        print("problems found: fix the error lines above")
    elif warnings:
        print(f"healthy, with {warnings} warning(s) above")
    else:
        print("healthy")
    return 1 if errors else 0


async def check_config(setup: Setup, report: Report) -> None:
    config = setup.config
    if config is None:
        return
    for w in config.warnings:
        report.add("warning", "config", str(w))
    if not config.files and not config.warnings:
        report.add("ok", "config", "no config files (built-in defaults)")
    for path, text in contributions(config):
        report.add("ok", "config", f"{path}: {text}")
    report.add("ok", "config", "parses, every reference resolves")


def contributions(config: Config) -> list[tuple[str, str]]:
    """(file, what it contributed and what was skipped) for every file the config read or
    tried to read, in the order they were read."""
    files = list(dict.fromkeys([str(o.path) for o in config.files]))
    files += [w.file for w in config.warnings if w.file not in files]
    with_settings = {
        str(o.path) for o in config.files if re.search(r"^\s*\[settings", o.text, re.M)
    }
    out = []
    for file in dict.fromkeys(files):
        counts = ["settings"] if file in with_settings else []
        for section in ("agents", "roles", "contexts", "tasks"):
            items = getattr(config, section).values()
            n = sum(1 for i in items if i.origin is not None and str(i.origin.path) == file)
            if n:
                counts.append(f"{n} {section if section != 'tasks' else 'templates'}")
        own = [w for w in config.warnings if w.file == file]
        skipped = sum(1 for w in own if "left out" in w.message)
        text = ", ".join(counts) or "nothing used"
        if skipped:
            text += f"; skipped {skipped} (see the warnings)"
        elif own:
            text += f"; {len(own)} warning(s)"
        out.append((file, text))
    return out


async def check_agents(setup: Setup, report: Report) -> None:
    from tui.agents.cli_process import find_cli
    from tui.config.schema import COMMAND_TYPE, DEFAULT_SHELL
    from tui.engine.adapter import AdapterError
    from tui.model.agent_kinds import DEFAULT_TYPE, KINDS

    config = setup.config
    if config is None:
        return
    names = list(config.agents)
    used = [t.model.agent for t in config.tasks.values()] + [config.settings.default_agent]
    names += [n for n in used if n and n not in names]
    if not names:  # templates run on the default agent when nothing else is said
        names = [DEFAULT_TYPE]
    for name in names:
        item = config.agent(name)
        if item is None:
            continue
        agent = item.model
        if agent.type == COMMAND_TYPE:  # a CLI of the user's own, run by its command template
            found = shutil.which(os.path.expanduser(agent.bin)) if agent.bin else None
            if found:
                report.add("ok", f"agent {name}", f"command template; bin {found}")
            else:
                what = f"bin {agent.bin!r} not found on PATH" if agent.bin else "no bin"
                report.add("error", f"agent {name}", f"{what} (its command template needs it)")
            continue
        kind = KINDS[agent.type]
        if not kind.cli:  # a shell agent: its script runs in the configured shell
            shell = config.settings.shell or DEFAULT_SHELL
            found = shutil.which(shell)
            if found:
                report.add("ok", f"agent {name}", f"shell {found}")
            else:
                report.add("error", f"agent {name}", f"shell {shell!r} not found on PATH")
            continue
        env = {**os.environ, **agent.env}
        if agent.bin:
            env[kind.bin_env] = agent.bin
        try:
            binary = find_cli(env, kind.bin_env, kind.cli, kind.not_found)
        except AdapterError as e:
            report.add("error", f"agent {name}", f"{e} (or bin = in [agents.{name}])")
            continue
        report.add(*await _version(f"agent {name}", [binary, *kind.version_args]))


async def _version(subject: str, argv: list[str]) -> tuple[Level, str, str]:
    from tui.config.commands import run_argv

    binary = argv[0]
    try:
        result = await run_argv(argv, timeout=VERSION_TIMEOUT)
    except OSError as e:
        return "error", subject, f"{binary}: cannot run: {e.strerror}"
    said = next((ln.strip() for ln in result.output.splitlines() if ln.strip()), "")
    if result.exit_code != 0:
        how = "timed out" if result.exit_code is None else f"exit {result.exit_code}"
        return "error", subject, f"{shlex.join(argv)} failed ({how}) {said}".rstrip()
    return "ok", subject, f"{binary} {said}".rstrip()


async def check_database(setup: Setup, report: Report) -> None:
    from tui.store.db import Store, StoreError
    from tui.store.paths import default_db_path

    path = default_db_path(setup.args.db, lambda: setup.settings.database)
    try:
        store = await Store.open(path)
    except (StoreError, OSError) as e:
        report.add("error", "database", f"{path}: {e}")
        return
    await store.close()
    for target in (path, Path(path).parent):  # WAL needs to create files beside it
        if not os.access(target, os.W_OK):
            report.add("error", "database", f"{target} is not writable")
            return
    report.add("ok", "database", f"{path} is writable")


async def check_taskfile(setup: Setup, report: Report) -> None:
    from tui.config.taskfile_templates import TaskfileTemplates

    source = TaskfileTemplates(Path.cwd())
    summary = source.summary()
    for warning in source.warnings:  # it could not be loaded: nothing of it is offered
        report.add("error", "taskfile", warning)
    report.add("ok" if not source.warnings else "error", "taskfile", summary)


RAY_PROBE_TIMEOUT = 60.0  # seconds to join the cluster and read its nodes


async def check_executor(setup: Setup, report: Report) -> None:
    """[executor]: local needs nothing; ray needs the package and a cluster to reach, whose
    nodes, free resources and labels are shown (a task's `resources:` must fit one of them)."""
    import json
    import sys

    from tui.config.commands import run_argv
    from tui.config.executor import executor_settings
    from tui.config.load import ConfigError

    try:
        ex = executor_settings()
    except ConfigError:
        return  # reported with the config
    if ex.kind != "ray":
        report.add("ok", "executor", "local: tasks run as process groups on this machine")
        return
    argv = [sys.executable, "-m", "tui.engine.ray_executor", ex.address]
    result = await run_argv(argv, timeout=RAY_PROBE_TIMEOUT)
    if _CLIENT_SERVER_FAILED in result.output:
        # Ray Client's per-connection server failed to start (it does, now and then, on a
        # busy head: "Starting Ray client server failed", a zombie found by its check); the
        # next connection gets a new one. Once more, as a person would run doctor again.
        result = await run_argv(argv, timeout=RAY_PROBE_TIMEOUT)
    lines = [ln for ln in result.output.splitlines() if ln.startswith("{")]
    if result.exit_code is None:
        report.add("error", "executor", f"ray {ex.address}: no answer in {RAY_PROBE_TIMEOUT:g}s")
        return
    if not lines:
        said = result.output.strip().splitlines()[-1:] or [f"exit {result.exit_code}"]
        report.add("error", "executor", f"ray {ex.address}: {said[0]}")
        return
    found = json.loads(lines[-1])
    if "error" in found:
        report.add("error", "executor", found["error"])
        return
    nodes = found["nodes"]
    report.add("ok", "executor", f"ray {ex.address}: Ray {found['ray']}, {len(nodes)} node(s)")
    for node in nodes:
        free = ", ".join(
            f"{name} {_amount(name, node['free'].get(name, 0))}/{_amount(name, total)}"
            for name, total in sorted(node["total"].items())
            if name != "object_store_memory"
        )
        role = " (head)" if node["head"] else ""
        labels = ", ".join(f"{k}={v}" for k, v in sorted(node.get("labels", {}).items()))
        line = f"node {node['id'][:12]}{role} {node['address']}: {free} free"
        report.add("ok", "executor", f"{line}; labels {labels}" if labels else line)


_CLIENT_SERVER_FAILED = "Initialization failure from server"  # Ray Client's, from ray.init


def _amount(name: str, value: float) -> str:
    return f"{value / 2**30:.1f}GiB" if name == "memory" else f"{value:g}"


CHECKS: list[Check] = [check_config, check_agents, check_taskfile, check_database, check_executor]
