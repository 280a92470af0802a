import json
import uuid

import pytest
from pydantic import ValidationError

from tui.model.agent_kinds import AGENT_TYPES
from tui.model.task import (
    AgentConfig,
    Backoff,
    PermissionMode,
    Priority,
    RetryConfig,
    Task,
    priority_rank,
)


def _task(**fields) -> Task:
    return Task(name="build", agent=AgentConfig(instructions="make it"), **fields)


def test_task_defaults():
    task = _task()
    uuid.UUID(task.id)  # a fresh uuid4 string
    assert task.parent_task_id == ""
    assert task.description == ""
    assert task.timeout == 0.0
    assert task.retry == RetryConfig()
    assert task.priority is Priority.NONE
    assert task.tags == []
    assert task.depends_on == []
    assert task.review is False
    assert _task().id != task.id


def test_agent_defaults():
    agent = AgentConfig()
    assert agent.type == "claude"
    assert agent.model == ""
    assert agent.context_files == []
    assert agent.instructions == ""
    assert agent.project_dir == ""
    assert agent.max_budget_usd == 0.0
    assert agent.permission_mode is PermissionMode.NONE
    assert agent.allowed_tools == []
    assert agent.disallowed_tools == []
    assert agent.system_prompt_append == ""
    assert agent.additional_args == []
    assert agent.skip_planning is False


def test_retry_defaults():
    retry = RetryConfig()
    assert retry.max_attempts == 1
    assert retry.backoff is Backoff.NONE
    assert retry.delay == 1.0


def test_enum_values():
    assert [p.value for p in Priority] == ["", "critical", "high", "normal", "low"]
    assert [b.value for b in Backoff] == ["", "none", "linear", "exponential"]
    assert PermissionMode.ACCEPT_EDITS == "acceptEdits"
    assert PermissionMode.BYPASS == "bypassPermissions"
    assert PermissionMode.DONT_ASK == "dontAsk"
    assert AGENT_TYPES == ("claude", "shell", "gemini", "codex", "taskfile")


def test_priority_rank_orders_high_normal_low():
    assert Priority.HIGH.rank < Priority.NORMAL.rank == Priority.NONE.rank < Priority.LOW.rank
    assert priority_rank("") == priority_rank("normal")
    ordered = sorted([Priority.LOW, Priority.NONE, Priority.HIGH], key=priority_rank)
    assert ordered == [Priority.HIGH, Priority.NONE, Priority.LOW]
    # critical is above high; the others keep the ranks databases already store
    assert [priority_rank(p) for p in ("critical", "high", "normal", "low")] == [-1, 0, 1, 2]


def _full_task() -> Task:
    return Task(
        id="t-1",
        parent_task_id="p-0",
        name="build",
        description="compile it",
        agent=AgentConfig(
            type="shell",
            model="opus",
            context_files=["a.md"],
            instructions="make",
            project_dir="/src",
            max_budget_usd=2.5,
            permission_mode=PermissionMode.PLAN,
            allowed_tools=["Read"],
            disallowed_tools=["Bash"],
            system_prompt_append="be brief",
            additional_args=["--x"],
            skip_planning=True,
            task="build",
            args=["a b"],
            mcp=False,
        ),
        timeout="2h45m30.5s",
        retry=RetryConfig(max_attempts=3, backoff="exponential", delay="250ms"),
        priority="high",
        tags=["ci"],
        depends_on=["t-0"],
        review=True,
    )


def test_json_round_trip_is_lossless():
    task = _full_task()
    data = task.model_dump(mode="json")
    assert data["timeout"] == "2h45m30.5s"
    assert data["retry"]["delay"] == "250ms"
    again = Task.model_validate(json.loads(json.dumps(data)))
    assert again == task
    assert again.timeout == 9930.5


def test_json_round_trip_of_defaults():
    task = _task()
    data = task.model_dump(mode="json")
    assert data["timeout"] == "0s"
    assert data["retry"]["delay"] == "1s"
    assert Task.model_validate(data) == task


def test_to_yaml_dict_omits_defaults_and_round_trips():
    task = _task(timeout=5400)
    data = task.to_yaml_dict()
    assert data == {
        "id": task.id,
        "name": "build",
        "agent": {"instructions": "make it"},
        "timeout": "1h30m",
    }
    assert Task.model_validate(data) == task
    full = _full_task()
    assert Task.model_validate(full.to_yaml_dict()) == full


def test_python_dump_keeps_seconds():
    assert _task(timeout="1m").model_dump()["timeout"] == 60.0


def test_model_rejects_unknown_keys():
    with pytest.raises(ValidationError):
        Task.model_validate({"name": "x", "agent": {"instructions": "y"}, "bogus": 1})


def test_depends_on_accepts_a_single_string():
    assert _task(depends_on="other").depends_on == ["other"]
