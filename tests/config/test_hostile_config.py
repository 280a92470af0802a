"""Hostile config.toml files and XML templates: a clear error naming the file, never a
traceback, an entity expanded, or unbounded memory — through the real `tui config validate`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.config.conftest import Dirs
from tests.config.test_xml_templates import write_xml
from tests.model.test_hostile_input import PEAK_RSS_MB, run_measured
from tui.config.load import ConfigError
from tui.config.merged import load_config
from tui.model.limits import MAX_FILE_BYTES

HOSTILE_TOML = {
    "array-nesting-50000": ("x = " + "[" * 50_000 + "]" * 50_000, "nested too deeply"),
    "array-nesting-100": ("x = " + "[" * 100 + "]" * 100, "nested more than 64 levels"),
    "table-nesting-2000": ("x = " + "{a=" * 2000 + "1" + "}" * 2000, "nested too deeply"),
    "int-400-digits": ("[settings]\nconcurrency = " + "9" * 400, "larger than TOML allows"),
    "int-5000-digits": ("[settings]\nconcurrency = " + "9" * 5000, "thousands of digits"),
    "timeout-past-go": ('[settings]\ncommand_timeout = "9999999h"', "longer than 2562047h"),
}

LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;">'
    + "".join(
        f'<!ENTITY {n} "' + f"&{p};" * 10 + '">' for p, n in zip("bcdefgh", "cdefghi", strict=True)
    )
    + ']>\n<task type="atomic" name="lol"><instructions>&i;</instructions></task>\n'
)
HOSTILE_XML = {
    "multi-byte-encoding": (
        '<?xml version="1.0" encoding="UTF-32"?><task type="atomic" name="x"/>',
        "cannot read its encoding",
    ),
    "unknown-encoding": (
        '<?xml version="1.0" encoding="bogus"?><task type="atomic" name="x"/>',
        "cannot read its encoding",
    ),
    "billion-laughs": (LAUGHS, "DOCTYPE and entity declarations are not allowed"),
    "external-entity": (
        '<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n'
        '<task type="atomic" name="x"><instructions>&e;</instructions></task>\n',
        "DOCTYPE and entity declarations are not allowed",
    ),
    "element-nesting-100000": (
        '<task type="atomic" name="x"><instructions>a</instructions>'
        + "<a>" * 100_000
        + "</a>" * 100_000
        + "</task>",
        "nested more than 64 levels",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TOML))
def test_hostile_config_toml_is_a_clear_error(dirs: Dirs, name: str) -> None:
    text, expected = HOSTILE_TOML[name]
    path = dirs.write_global(text + "\n")
    with pytest.raises(ConfigError) as refused:
        load_config()
    [issue] = refused.value.issues
    assert issue.file == str(path) and expected in issue.message and issue.fix


@pytest.mark.parametrize("name", sorted(HOSTILE_XML))
def test_hostile_xml_template_is_a_clear_warning(dirs: Dirs, name: str) -> None:
    # One broken template source is a warning naming it; the rest of the config still loads.
    text, expected = HOSTILE_XML[name]
    path = write_xml(dirs.global_dir, f"{name}.xml", text)
    config = load_config()
    [issue] = config.warnings
    assert issue.file == str(path) and expected in issue.message
    assert not config.tasks
    assert "lol" not in issue.message and "root:" not in issue.message


def test_oversized_files_are_not_read_whole(dirs: Dirs) -> None:
    padding = "# padding\n" * (MAX_FILE_BYTES // 10 + 1)
    dirs.write_global(padding)
    write_xml(dirs.global_dir, "big.xml", "<!--" + padding + "-->")
    with pytest.raises(ConfigError) as refused:
        load_config()
    too_big = "file is larger than 10,000,000 bytes, the most tui reads"
    assert [i.message for i in refused.value.issues] == [too_big]  # config.toml: an error
    assert [i.message for i in refused.value.warnings] == [too_big]  # a template: a warning


@pytest.mark.parametrize("name", ["array-nesting-50000", "int-5000-digits"])
def test_tui_config_validate_says_so_in_bounded_memory(
    dirs: Dirs, tmp_path: Path, name: str
) -> None:
    text, expected = HOSTILE_TOML[name]
    dirs.write_global(text + "\n")
    write_xml(dirs.global_dir, "laughs.xml", LAUGHS)
    code, output, peak_mb = run_measured(
        [sys.executable, "-m", "tui", "config", "validate"], dirs.project
    )
    assert code == 2, output
    assert "Traceback" not in output
    assert expected in output and "DOCTYPE" in output
    assert peak_mb < PEAK_RSS_MB
    assert os.environ["TUI_CONFIG_DIR"] == str(dirs.global_dir)  # the child read these files
