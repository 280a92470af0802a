"""The one table of agent kinds: each declared kind has a working adapter of that type, and
what the model, the config and doctor accept follows the table."""

from __future__ import annotations

import pytest

from tui.config.schema import AgentDef
from tui.engine.adapter import declared_adapters
from tui.model.agent_kinds import BUILTIN_AGENTS, KINDS, AgentKind
from tui.model.task import AgentConfig


@pytest.mark.parametrize("kind", list(KINDS.values()), ids=list(KINDS))
def test_every_kind_loads_an_adapter_of_its_type(kind: AgentKind) -> None:
    adapter = declared_adapters()[kind.name]
    assert adapter.type == kind.name
    assert callable(adapter.run)


def test_every_kind_is_a_valid_task_agent_type() -> None:
    for name in KINDS:
        assert AgentConfig(type=name, instructions="x", task="t").type == name


def test_a_kind_with_a_cli_is_usable_by_name_and_names_its_binary_variable() -> None:
    assert set(BUILTIN_AGENTS) == {k.name for k in KINDS.values() if k.cli}
    for name in BUILTIN_AGENTS:
        kind = KINDS[name]
        assert kind.bin_env == f"TUI_{name.upper()}_BIN"
        assert kind.bin_env in kind.not_found and kind.install in kind.not_found
        assert AgentDef(type=name, default_model="m").type == name
