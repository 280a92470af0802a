"""`tui task NAME|ALIAS ["instructions"]` runs a template; `tui task --list` shows them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.config.templates import TemplateSource


class _Intermixed(argparse.ArgumentParser):
    """Lets the instructions follow options (`tui task NAME --role R "text"`): plain argparse
    binds both optional positionals at the first one."""

    _inside = False

    def parse_known_args(self, args=None, namespace=None):
        if self._inside:  # parse_known_intermixed_args calls back in here
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


def add_parsers(sub: argparse._SubParsersAction, db: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "task",
        parents=[db],
        help="create and run a task from a template (`-- ARGS...` for a Taskfile task)",
    )
    p.__class__ = _Intermixed
    p.add_argument("name", nargs="?", metavar="NAME", help="template name or alias")
    p.add_argument("instructions", nargs="?", default="", help="your text for {instructions}")
    p.add_argument("--role", default="", metavar="R")
    p.add_argument("--agent", default="", metavar="A")
    p.add_argument("--model", default="", metavar="M", help="a model or the agent's short name")
    p.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a template variable ({{NAME}}), or a go-task variable of a Taskfile task; "
        "repeat for more",
    )
    p.add_argument("--list", action="store_true", help="list every template and its source")
    p.add_argument(
        "--json",
        action="store_true",
        help="JSON output (list or transitions; states as stored: RUNNING, COMPLETED…)",
    )
    p.set_defaults(
        handler=cmd_task, concurrency=None, shell=None, manual_approve=False, task_args=[]
    )


def split_task_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """`tui task NAME -- ARGS...`: what follows `--` goes to the Taskfile task untouched
    (argparse's intermixed parsing cannot keep a remainder itself)."""
    if argv[:1] == ["task"] and "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


async def cmd_task(args: argparse.Namespace) -> int:
    # Imported here: every `tui` start (a task's `tui ask` too) builds this parser.
    from tui.cli.common import err, open_store
    from tui.cli.run import run_tasks
    from tui.config.merged import load_config
    from tui.config.templates import TaskRequest, TemplateError, find, template_sources
    from tui.model.task import default_worktree

    config = load_config()  # raises ConfigError with every problem
    for w in config.warnings:
        print(f"warning: {w}", file=sys.stderr)
    sources = template_sources(config)
    if args.list:
        try:
            _print_list(sources, args.json)
        except TemplateError as e:
            err(str(e))
            return 2
        _print_warnings(sources)
        return 0
    if not args.name:
        err('name a template: `tui task NAME ["instructions"]` (`tui task --list` shows them)')
        return 2
    bad = [v for v in args.var if "=" not in v]
    if bad:
        err(f"--var {bad[0]!r}: write NAME=VALUE")
        return 2
    variables = dict(v.split("=", 1) for v in args.var)
    try:
        source, template = find(sources, args.name)
        request = TaskRequest(
            args.instructions, args.role, args.agent, args.model, variables, args.task_args
        )
        task = await source.make_task(template.name, request)
        default_worktree([task], config.settings.worktree)
    except TemplateError as e:
        _print_warnings(sources)  # a source that could not load may be why it is missing
        err(str(e))
        return 2
    _print_warnings(sources)  # e.g. a context's file that is not there
    async with open_store(args.db) as store:
        return await run_tasks(store, [task], args)


def _print_list(sources: list[TemplateSource], as_json: bool) -> None:
    from tui.config.templates import all_templates

    templates = all_templates(sources)
    if as_json:
        print(json.dumps([t.as_json() for t in templates], indent=2))
        return
    if not templates:
        print(
            "no templates: add [tasks.NAME] to config.toml, or tasks to .agent/Taskfile.yml",
            file=sys.stderr,
        )
        return
    width = max(len(t.name) for t in templates)
    for t in templates:
        alias = f"({t.alias})" if t.alias else ""
        # One line each: a multi-line description (a Taskfile summary) shows its first line.
        first = next((ln.strip() for ln in t.description.splitlines() if ln.strip()), "")
        label = f"[{t.label}] " if t.label else ""
        print(f"{t.name:<{width}}  {alias:<10} {t.source:<8} {label}{first}".rstrip())


def _print_warnings(sources: list[TemplateSource]) -> None:
    for warning in (w for s in sources for w in s.warnings):
        print(f"warning: {warning}", file=sys.stderr)
