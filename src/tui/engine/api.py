"""The engine's API, declared once: every command and query a client sends is a message class
here, with the class of its reply. The engine answers them (``Engine.handle``, one handler per
message in ``tui.engine.handlers``), the daemon's socket carries the same models as JSON, and
every client sends them with ``send(message)``. Adding a command is one class here and one
handler there.

Messages are told apart by ``op`` (a discriminated union); replies are typed, so nothing is
ever parsed out of reply text (task ids are a list, whatever characters they hold).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StrictBool,
    TypeAdapter,
)

from tui.model.states import State
from tui.model.task import Task
from tui.store.records import OutputLine, QuestionRecord, TaskRecord

# -- records as they travel --------------------------------------------------------------------
# Plain functions rather than pydantic models of each record: attaching to a daemon with 10,000
# tasks must stay cheap (the spec travels as the JSON it is stored as and is parsed on use).


def task_to_wire(rec: TaskRecord) -> dict[str, Any]:
    d = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rec)}
    d["spec"] = rec.spec if isinstance(rec.spec, str) else rec.spec.model_dump_json()
    d["state"] = rec.state.value
    return d


_STATES = {s.value: s for s in State}  # a dict lookup: State(value) is ~5 us, x 10,000 tasks


def task_from_wire(d: dict[str, Any]) -> TaskRecord:
    state = _STATES.get(d["state"]) or State(d["state"])  # State(): the error for a bad one
    return TaskRecord(**{**d, "state": state})


def _tasks_in(v: Any) -> list[TaskRecord]:
    return [x if isinstance(x, TaskRecord) else task_from_wire(x) for x in v]


def _questions_in(v: Any) -> list[QuestionRecord]:
    return [x if isinstance(x, QuestionRecord) else QuestionRecord(**x) for x in v]


def _line_to_wire(ln: OutputLine) -> list[Any]:
    return [ln.id, ln.task_id, ln.run_id, ln.stream, ln.seq, ln.at, ln.text]


def _lines_in(v: Any) -> list[OutputLine]:
    return [x if isinstance(x, OutputLine) else OutputLine(*x) for x in v]


Tasks = Annotated[
    list[TaskRecord],
    PlainValidator(_tasks_in),
    PlainSerializer(lambda v: [task_to_wire(x) for x in v], when_used="json"),
]
Questions = Annotated[
    list[QuestionRecord],
    PlainValidator(_questions_in),
    PlainSerializer(lambda v: [dataclasses.asdict(x) for x in v], when_used="json"),
]
Lines = Annotated[
    list[OutputLine],
    PlainValidator(_lines_in),
    PlainSerializer(lambda v: [_line_to_wire(x) for x in v], when_used="json"),
]


# -- replies -----------------------------------------------------------------------------------


# defer_build: a model's validator is built on its first use, not at import. A `tui run` no
# client talks to never needs most of them (building them all took ~20 ms of every start).
class Reply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Done(Reply):
    """A command carried out; ``text`` says what happened, for a person."""

    text: str


class Submitted(Reply):
    ids: list[str]


class Asked(Reply):
    question_id: str
    status: str = "open"  # open (not waited for) | answered | expired | cancelled
    answer: dict[str, Any] | None = None


class TaskList(Reply):
    tasks: Tasks
    # Where the event stream stood when these records were read: a follower that has seen
    # every event up to here has seen every transition that led to them.
    cursor: tuple[int, int] = (0, 0)


class QuestionList(Reply):
    questions: Questions


class OutputIndexReply(Reply):
    runs: list[tuple[int, int]]


class LinesReply(Reply):
    lines: Lines


class RunningTask(BaseModel):
    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    # Its agent has exited and its end waits for room on a full disk (an older daemon: False).
    ending: bool = False


class StatusReply(Reply):
    protocol: int
    pid: int
    db: str
    socket: str
    log: str
    started_at: float
    uptime: float
    running_tasks: list[RunningTask]
    tasks: int
    viewers: int
    foreground: bool = False  # a `tui run` or the app's --foreground, not the daemon
    concurrency: int = 0  # the engine's settings (0, "": an older daemon did not say)
    shell: str = ""


R = TypeVar("R", bound=Reply)


class Message(BaseModel, Generic[R]):
    """A request to the engine; ``reply`` is the class of its answer. Every concrete message
    (one with an ``op``) is on the wire by being defined: see ``Request``."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    reply: ClassVar[type[Reply]]


class Command(Message[R], Generic[R]):
    """Changes something: never sent twice (a client that loses the engine fails instead)."""


class Query(Message[R], Generic[R]):
    """Reads: a client may ask again after reconnecting."""


# -- commands ----------------------------------------------------------------------------------


class Submit(Command[Submitted]):
    """Store and schedule tasks. ``approved`` False keeps them PENDING for `tui approve`."""

    reply = Submitted
    op: Literal["submit"] = "submit"
    tasks: list[Task]
    approved: StrictBool | None = None


class TaskCommand(Command[Done]):
    """A command on one task, carried out by one engine call whose text is the reply (see
    ``handlers.task_command``)."""

    reply = Done
    task_id: str


class Approve(TaskCommand):
    op: Literal["approve"] = "approve"


class Cancel(TaskCommand):
    op: Literal["cancel"] = "cancel"


class Retry(TaskCommand):
    op: Literal["retry"] = "retry"


class Answer(Command[Done]):
    """A person's answer, delivered exactly once (a second one is refused)."""

    reply = Done
    op: Literal["answer"] = "answer"
    question_id: str
    answer: dict[str, Any]


class Expire(Command[Done]):
    """Stop waiting for an answer."""

    reply = Done
    op: Literal["expire"] = "expire"
    question_id: str


class Accept(TaskCommand):
    op: Literal["accept"] = "accept"


class Reject(TaskCommand):
    op: Literal["reject"] = "reject"
    comment: str = ""


class Ask(Command[Asked]):
    """A question from inside a running task (`tui ask`, MCP ``ask_user``). With ``wait`` the
    reply comes when the question closes (answered, or expired after ``timeout`` seconds; 0 =
    no limit): one request held open, nothing polled."""

    reply = Asked
    op: Literal["ask"] = "ask"
    task_id: str
    run_id: int
    kind: str = "question"
    payload: dict[str, Any]
    wait: StrictBool = False
    timeout: float = Field(default=0.0, ge=0)


class Merge(TaskCommand):
    """Merge a finished worktree task's branch into its base branch (issue 15)."""

    op: Literal["merge"] = "merge"


class Discard(TaskCommand):
    """Remove a worktree task's worktree and branch: its work is thrown away."""

    op: Literal["discard"] = "discard"


class Send(Command[Done]):
    """A person's message to a running agent, delivered as a user turn (claude)."""

    reply = Done
    op: Literal["send"] = "send"
    task_id: str
    text: str


class Continue(Command[Done]):
    """A new attempt that resumes a finished agent's session with ``text``."""

    reply = Done
    op: Literal["continue"] = "continue"
    task_id: str
    text: str


class CollectWorktrees(Command[Done]):
    """`tui gc`: remove worktrees no task needs any more."""

    reply = Done
    op: Literal["gc"] = "gc"


# -- queries -----------------------------------------------------------------------------------


class WorktreeReply(Reply):
    path: str
    branch: str
    base_branch: str
    base_sha: str
    status: str
    # (path, lines added, lines removed) per changed file; None counts for a binary file
    files: list[tuple[str, int | None, int | None]] = []
    diff: str = ""


class GetWorktree(Query[WorktreeReply]):
    """A task's worktree; with ``diff`` its changes against the base (``color``: ANSI)."""

    reply = WorktreeReply
    op: Literal["worktree"] = "worktree"
    task_id: str
    diff: StrictBool = False
    color: StrictBool = False


class ListTasks(Query[TaskList]):
    reply = TaskList
    op: Literal["list_tasks"] = "list_tasks"


class GetMany(Query[TaskList]):
    """The known tasks among ``task_ids`` (one trip for many)."""

    reply = TaskList
    op: Literal["get_many"] = "get_many"
    task_ids: list[str]


class GetQuestions(Query[QuestionList]):
    """Open questions, newest first (of one task, or all)."""

    reply = QuestionList
    op: Literal["questions"] = "questions"
    task_id: str | None = None


class OutputIndex(Query[OutputIndexReply]):
    """(run id, lines) of each run of a task: what the log view pages through."""

    reply = OutputIndexReply
    op: Literal["output_index"] = "output_index"
    task_id: str


class ReadRunLines(Query[LinesReply]):
    reply = LinesReply
    op: Literal["read_run_lines"] = "read_run_lines"
    run_id: int
    first_seq: int
    last_seq: int


# -- the server's own (answered by whoever serves the socket, not by the engine) ---------------


class Status(Query[StatusReply]):
    reply = StatusReply
    op: Literal["status"] = "status"


class Shutdown(Command[Done]):
    reply = Done
    op: Literal["shutdown"] = "shutdown"


class Subscribe(Query[Done]):
    """Turns the connection into the event stream from ``cursor`` (see docs/daemon.md)."""

    reply = Done
    op: Literal["subscribe"] = "subscribe"
    cursor: tuple[int, int]


def _messages(base: type[Message[Any]]) -> list[type[Message[Any]]]:
    """Every concrete message class under ``base``, in the order they were defined."""
    found: list[type[Message[Any]]] = []
    sub: type[Message[Any]]
    for sub in base.__subclasses__():
        if "op" in sub.model_fields and sub not in found:
            found.append(sub)
        found += [m for m in _messages(sub) if m not in found]
    return found


MESSAGES = _messages(Message)
COMMANDS: tuple[type[Message[Any]], ...] = tuple(m for m in MESSAGES if issubclass(m, Command))
# The wire's one union, derived from the classes above: a new message is a new class.
Request = Annotated[Union[tuple(MESSAGES)], Field(discriminator="op")]  # type: ignore[valid-type]  # noqa: UP007


@functools.cache
def _requests() -> TypeAdapter[Message[Any]]:
    return TypeAdapter(Request)  # type: ignore[arg-type]


def parse_request(data: Any) -> Message[Any]:
    """A request from its JSON form; pydantic's ValidationError says what is wrong."""
    return _requests().validate_python(data)
