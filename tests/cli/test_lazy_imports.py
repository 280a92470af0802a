"""Each command imports what it runs and no more: `tui run` and `tui ls` never load the app
(Textual alone takes longer to import than the rest of tui), `tui --version` not even the
engine. Every start of `tui run` pays for what it imports; so does every `tui ask` a task runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.cli.cli_support import Tui, shell_task, write_tasks

# Runs `tui ARGS...` in a fresh interpreter, then prints the modules it loaded.
PROBE = """
import json, sys
from tui.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
# Modules imported but not executed yet (tui.engine.api: see tui.engine._OnFirstUse).
lazy = sorted(n for n, m in list(sys.modules.items()) if type(m).__name__ == "_OnFirstUse")
print(json.dumps({"code": code, "modules": sorted(sys.modules), "lazy": lazy}), file=sys.stderr)
"""


def loaded(tui: Tui, *args: str) -> set[str]:
    """The modules ``tui ARGS...`` executed (imported and not left lazy)."""
    report = _report(tui, *args)
    return set(report["modules"]) - set(report["lazy"])


def _report(tui: Tui, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tui.dir,
        stdin=subprocess.DEVNULL,
    )
    report: dict[str, Any] = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), proc.stderr
    return report


def _ui(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] == "textual" or m.startswith("tui.app"))


def test_run_and_ls_never_import_the_app(tui: Tui, tmp_path: Path) -> None:
    f = write_tasks(tmp_path / "t.yaml", [shell_task("one", "true")])
    db = str(tui.db)
    run = loaded(tui, "run", str(f), "--db", db)
    assert "tui.engine.scheduler" in run  # the probe saw a real run
    assert _ui(run) == []
    ls = loaded(tui, "ls", "--db", db)
    assert _ui(ls) == []
    assert tui.state_of("one") == "COMPLETED"


def test_version_imports_neither_engine_nor_pydantic(tui: Tui) -> None:
    mods = loaded(tui, "--version")
    heavy = sorted(
        m
        for m in mods
        if m.split(".")[0] in ("pydantic", "textual", "yaml")
        or m in ("tui.engine.scheduler", "tui.engine.api", "tui.store.db")
    )
    assert heavy == []
    assert sorted(m for m in mods if m.split(".")[0] in ("asyncio", "argparse")) == []


def test_run_never_imports_the_other_commands_modules(tui: Tui, tmp_path: Path) -> None:
    """`tui run` builds only the parsers declared beside it: `tui web`'s, `tui doctor`'s...
    modules (~5 ms) stay unloaded. The full parser still lists every command."""
    f = write_tasks(tmp_path / "t.yaml", [shell_task("one", "true")])
    run = loaded(tui, "run", str(f), "--db", str(tui.db))
    others = ("web", "doctor", "daemon_cmd", "human", "config_cmd", "worktree_cmd", "export_cmd")
    assert sorted(m for m in run if m.removeprefix("tui.cli.") in others) == []
    assert tui.state_of("one") == "COMPLETED"
    usage = subprocess.run(
        [sys.executable, "-m", "tui", "--help"], capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 0
    for command in ("run", "web", "doctor", "daemon", "ask", "task", "worktree", "export"):
        assert f"    {command} " in usage.stdout, command
    bad = subprocess.run(
        [sys.executable, "-m", "tui", "run", "--no-such-option"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unrecognized arguments: --no-such-option" in bad.stderr


def test_run_without_a_schema_never_imports_jsonschema(tui: Tui, tmp_path: Path) -> None:
    """jsonschema (~40 ms) is loaded only to check a task's output_format.schema."""
    f = write_tasks(tmp_path / "t.yaml", [shell_task("plain", "true")])
    run = loaded(tui, "run", str(f), "--db", str(tui.db))
    assert "tui.model.output_format" in run  # the model that would have imported it
    assert sorted(m for m in run if m.split(".")[0] in ("jsonschema", "referencing")) == []
    assert tui.state_of("plain") == "COMPLETED"


def test_run_of_plain_tasks_never_imports_xml_sax_or_simpleeval(tui: Tui, tmp_path: Path) -> None:
    """xml.sax (with urllib and http, ~6 ms) escapes only a task's variables for its agent;
    simpleeval evaluates only `when:`/`until:` conditions."""
    f = write_tasks(tmp_path / "t.yaml", [shell_task("plain", "true")])
    run = loaded(tui, "run", str(f), "--db", str(tui.db))
    assert "tui.model.system_parts" in run and "tui.engine.dispatch" in run
    assert sorted(m for m in run if m.split(".")[0] == "simpleeval" or m == "xml.sax") == []
    assert tui.state_of("plain") == "COMPLETED"


def test_run_with_no_xml_templates_never_imports_an_xml_parser(tui: Tui, tmp_path: Path) -> None:
    """Every `tui run` reads the config's [settings]; the XML templates' reader and parser
    (xml.etree and defusedxml, ~3 ms) only when the whole config is read (a task naming a
    system part) and a templates folder has files."""
    f = write_tasks(tmp_path / "t.yaml", [shell_task("plain", "true")])
    run = loaded(tui, "run", str(f), "--db", str(tui.db))
    assert "tui.config.load" in run
    xml = ("xml.etree", "defusedxml", "tui.config.xml_templates")
    assert sorted(m for m in run if m.startswith(xml)) == []


def test_run_that_no_client_talks_to_never_builds_the_api_messages(
    tui: Tui, tmp_path: Path
) -> None:
    """tui.engine.api's ~40 message classes (~9 ms) are built when a message is first made or
    read: a `tui run` that no other client talks to needs none of them."""
    f = write_tasks(tmp_path / "t.yaml", [shell_task("plain", "true")])
    run = loaded(tui, "run", str(f), "--db", str(tui.db))
    assert "tui.engine.scheduler" in run and "tui.daemon.server" in run
    assert "tui.engine.api" not in run
    assert tui.state_of("plain") == "COMPLETED"


def test_plain_run_never_imports_the_engines_feature_modules(tui: Tui, tmp_path: Path) -> None:
    """What only some tasks use is imported by them (tests/cli's until, workflow and
    output_format runs go through it): classifying, summaries, `when:`/`until:` conditions
    and loops, talking to an agent, checking a result. A plain DAG pays for none of them."""
    f = write_tasks(
        tmp_path / "t.yaml",
        [shell_task("first", "true"), shell_task("second", "true", depends_on=["first"])],
    )
    run = loaded(tui, "run", str(f), "--db", str(tui.db))
    assert "tui.engine.dispatch" in run and "tui.engine.run_end" in run
    features = ("classifying", "summaries", "conditions", "loops", "talk", "validation")
    assert sorted(m for m in run if m.removeprefix("tui.engine.") in features) == []
    assert tui.state_of("second") == "COMPLETED"
