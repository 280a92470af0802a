"""One agent as the keeper (tui.procs.keeper) holds it, from its start to its ``forget``.

Imported at the keeper's start (``python -I -S``): the standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's costs ~2 ms at the keeper's start; mypy takes this name as it
if TYPE_CHECKING:
    from tui.procs.keeper_afterlife import Kept


class Agent:
    """What the keeper knows of one agent it started: its group, its pipes and the bytes of
    each in flight, its stdin, its exit code; kept output while it is adoptable."""

    __slots__ = (
        "adoptable",
        "close_in",
        "code",
        "fds",
        "heard",
        "held",
        "kept",
        "key",
        "paused",
        "pgid",
        "pid",
        "run_id",
        "start_time",
        "stdin_buf",
        "stdin_fd",
    )

    def __init__(
        self, key: int, pid: int, out: int, err: int, inw: int, run_id: int, adoptable: bool
    ) -> None:
        self.key = key
        self.pid = pid  # 0 once reaped
        self.pgid = pid  # its group, the leader reaped or not
        self.start_time = 0
        self.code: int | None = None  # the exit code, once reaped
        self.run_id = run_id
        self.adoptable = adoptable
        self.fds = {out: 1, err: 2}  # open read ends → stream
        self.held = {1: 0, 2: 0}  # bytes sent, not yet taken by the engine
        # An engine takes this agent's events: its own, or one that claimed it. Between an
        # adopting engine's hello and its claim, output goes to `kept` only: the claim resends
        # it from the stored offsets, so an event sent meanwhile would reach the engine twice.
        self.heard = True
        self.kept: dict[int, Kept] = {}  # stream → bytes not acknowledged (adoptable only)
        self.paused: set[int] = set()
        self.stdin_fd = inw
        self.stdin_buf = bytearray()
        self.close_in = False

    @property
    def done(self) -> bool:
        return self.pid == 0 and not self.fds
