"""`tui doctor`: is everything tui needs in order? Exit 0 when healthy, 1 on any error or
warning. Each check reports (level, subject, text) lines; more checks join ``CHECKS``."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the rest is imported when doctor runs, not at every `tui` start
    from tui.config.load import Config
    from tui.config.schema import Settings

Level = Literal["ok", "warning", "error"]
VERSION_TIMEOUT = 20.0  # seconds for `CLI --version` (node CLIs start slowly on a busy box)


@dataclass
class Report:
    lines: list[tuple[Level, str, str]] = field(default_factory=list)

    def add(self, level: Level, subject: str, text: str) -> None:
        self.lines.append((level, subject, text))

    @property
    def healthy(self) -> bool:
        return all(level == "ok" for level, _, _ in self.lines)


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
    from tui.config.load import ConfigError, load_config, load_settings

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
    print("healthy" if report.healthy else "problems found: fix the lines above")
    return 0 if report.healthy else 1


async def check_config(setup: Setup, report: Report) -> None:
    config = setup.config
    if config is None:
        return
    for w in config.warnings:
        report.add("warning", "config", str(w))
    files = ", ".join(str(o.path) for o in config.files) or "none (built-in defaults)"
    report.add("ok", "config", f"parses, every reference resolves; files: {files}")


async def check_agents(setup: Setup, report: Report) -> None:
    from tui.agents.cli_process import find_cli
    from tui.config.schema import DEFAULT_SHELL
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
    from tui.taskfile import TaskfileError, find_taskfile, list_file

    path = find_taskfile(Path.cwd())
    if path is None:
        report.add("ok", "taskfile", "none in .agent/ (optional)")
        return
    try:
        tasks = list_file(path)
    except TaskfileError as e:
        report.add("error", "taskfile", str(e))
        return
    report.add("ok", "taskfile", f"{path}: {len(tasks)} task(s)")


CHECKS: list[Check] = [check_config, check_agents, check_taskfile, check_database]
