"""Fuzzing every input file tui reads: generated from grammars of valid input, then mutated;
each case is a clear error or valid tasks, never a traceback (bounded examples: fast)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.fuzz.grammars import (
    CONFIG_FILES,
    TASK_FILES,
    XML_FILES,
    check_config,
    check_task_file,
    check_xml,
    config_dirs,
)

FUZZ = settings(
    max_examples=200,
    deadline=None,  # a shared 2-core machine: time is checked by the limit tests instead
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)


@FUZZ
@given(text=TASK_FILES)
def test_task_files_never_crash(text: str) -> None:
    assert check_task_file(text) in ("valid", "error")


@FUZZ
@given(toml=CONFIG_FILES)
def test_config_toml_never_crashes(toml: str) -> None:
    with config_dirs() as (user, project):
        assert check_config(user, project, toml) in ("valid", "error")


@FUZZ
@given(xml=XML_FILES)
def test_xml_templates_never_crash(xml: str, tmp_path: Path) -> None:
    assert check_xml(tmp_path / "fuzz.xml", xml) in ("valid", "error")
    with config_dirs() as (user, project):
        assert check_config(user, project, "", xml) in ("valid", "error")
