"""`tui config validate`: check the global and the project config.toml."""

from __future__ import annotations

import argparse
import sys


def add_parsers(sub: argparse._SubParsersAction, db: argparse.ArgumentParser) -> None:
    p = sub.add_parser("config", help="check the configuration")
    what = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    v = what.add_parser("validate", help="check config.toml files; exit 2 on any error")
    v.set_defaults(handler=cmd_validate)


async def cmd_validate(args: argparse.Namespace) -> int:
    from tui.config.load import config_files  # not at every `tui` start
    from tui.config.merged import load_config

    config = load_config()  # raises ConfigError: main prints every problem, exit 2
    for w in config.warnings:
        print(f"warning: {w}", file=sys.stderr)
    # [settings.keys] names app commands: the app's own check, so both say the same.
    from tui.app.keymap import keymap_from

    _, key_problems = keymap_from(config.settings.keys)
    for problem in key_problems:
        print(f"error: {problem}", file=sys.stderr)
    if key_problems:
        return 2
    if not config.files:
        looked = " and ".join(str(path) for path, _, _ in config_files(config.project_dir))
        print(f"ok: no config files (looked for {looked})")
        return 0
    counts = ", ".join(
        f"{len(getattr(config, s))} {s}" for s in ("tasks", "roles", "contexts", "agents")
    )
    print(f"ok: {counts} from {', '.join(str(o.path) for o in config.files)}")
    return 0
