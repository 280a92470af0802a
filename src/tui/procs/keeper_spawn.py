"""glibc's posix_spawn through ctypes, for the keeper's start threads (tui.procs.keeper_starts).

glibc's posix_spawn returns only once the child has exec'd (clone with CLONE_VFORK): ~60 us on a
quiet machine, milliseconds when every core is taken. ``os.posix_spawn`` holds the GIL for that
wait (CPython 3.11), so starts went one at a time (session 10, branch keeperspawn); a ctypes
call releases it, so starts on the keeper's threads overlap, as Popen's did, for less CPU: one
thread starting /usr/bin/true back to back, 54-68 us a start against Popen's 78-88 us (the bare
posix_spawn call is ~30 us; bench/README.md, session 12).

What an agent gets is what Popen gave it (tests/procs/test_keeper_starts.py pins it):

* its own session and process group (POSIX_SPAWN_SETSID), stdin a pipe or /dev/null (read-write,
  as Popen's DEVNULL), stdout and stderr pipes, and no other descriptor (closefrom(3), glibc
  2.34+; every descriptor of the keeper is close-on-exec besides);
* SIGPIPE and SIGXFSZ back to their defaults (Popen's ``restore_signals``), a signal the keeper
  ignores still ignored (as after any exec: tests/cli/test_cli_agent_signals.py), one it catches
  at its default, and an empty signal mask;
* ``executable`` run with ``argv`` (argv[0] as given); a name without a slash looked up on the
  *agent's* PATH as Popen does (posix_spawnp would search the keeper's): the first candidate that
  starts wins, the error reported is the first that was not "no such file", naming the command;
* ``cwd`` entered by the child before its exec (addchdir_np, glibc 2.29+): a missing one raises
  naming it, as Popen's does.

A failed exec is posix_spawn's return value (glibc 2.24+), and glibc has reaped that child.

Imported by keeper_starts.py in the keeper (``python -I -S``): the standard library only.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import time

TYPE_CHECKING = False  # typing's costs ~2 ms at the keeper's start; mypy takes this name as it
if TYPE_CHECKING:
    from typing import Any

# glibc's <spawn.h>
_SETSIGDEF = 0x04
_SETSIGMASK = 0x08
_SETSID = 0x80
# Room for glibc's posix_spawnattr_t (336 bytes on x86-64), posix_spawn_file_actions_t (80)
# and sigset_t (128), with margin for any other architecture.
_ATTR_SIZE = 1024
_ACTIONS_SIZE = 256
_SIGSET_SIZE = 256
_POINTER = 8 if sys.maxsize > 2**32 else 4
_MISSING = (errno.ENOENT, errno.ENOTDIR)  # Popen's search goes on past these silently
_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")  # /proc's clock ticks (USER_HZ)
_BOOT = time.CLOCK_BOOTTIME
_now = time.clock_gettime_ns


class Unavailable(Exception):
    """This libc lacks what the agents need (not glibc ≥ 2.29, say): Popen it is."""


class BaseEnv:
    """The environment an engine's spawns are relative to: each name's ``NAME=value`` entry, and
    (made by the first start that needs it) the array of pointers to them posix_spawn takes,
    which each start copies whole and changes only where its own env differs."""

    def __init__(self, entries: dict[bytes, bytes]) -> None:
        self.entries = entries
        self.slots = {name: i for i, name in enumerate(entries)}
        self.array: Any = None

    def whole(self, changed: list[tuple[bytes, bytes]], unset: list[bytes]) -> dict[bytes, bytes]:
        """A start's env as a dict: name → entry."""
        env = self.entries.copy()
        env.update(changed)
        for name in unset:
            env.pop(name, None)
        return env


class Spawner:
    """posix_spawn with the attributes every agent gets, made once and shared by the threads
    (posix_spawn only reads them)."""

    def __init__(self, home: str) -> None:
        import ctypes  # here, on the first start thread: ~3 ms the keeper's start does not wait

        self._pointers = ctypes.c_char_p
        self._buffer = ctypes.create_string_buffer
        self._byref = ctypes.byref
        self._pid = ctypes.c_int
        try:
            # posix_spawn releases the GIL while the child execs (ctypes.CDLL); the calls that
            # only fill memory keep it (ctypes.PyDLL): a release is a chance for another
            # thread to take it, and each hand-over costs a wake-up.
            self._spawn = ctypes.CDLL(None).posix_spawn
            libc = ctypes.PyDLL(None)
            self._init = libc.posix_spawn_file_actions_init
            self._destroy = libc.posix_spawn_file_actions_destroy
            self._dup2 = libc.posix_spawn_file_actions_adddup2
            self._chdir = libc.posix_spawn_file_actions_addchdir_np
            self._closefrom = getattr(libc, "posix_spawn_file_actions_addclosefrom_np", None)
            self._memmove = libc.memmove
            attr_init = libc.posix_spawnattr_init
            set_flags = libc.posix_spawnattr_setflags
            set_sigdefault = libc.posix_spawnattr_setsigdefault
            set_sigmask = libc.posix_spawnattr_setsigmask
            sigemptyset = libc.sigemptyset
            sigaddset = libc.sigaddset
        except (OSError, AttributeError) as e:
            raise Unavailable(str(e)) from None
        self.home = home
        self.attr = ctypes.create_string_buffer(_ATTR_SIZE)
        default = ctypes.create_string_buffer(_SIGSET_SIZE)
        empty = ctypes.create_string_buffer(_SIGSET_SIZE)
        ok = attr_init(self.attr) == 0 and sigemptyset(default) == 0 and sigemptyset(empty) == 0
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            ok = ok and sigaddset(default, int(sig)) == 0
        # glibc's child sets its own signals (32, 33: thread cancellation, setxid) to SIG_IGN
        # unless they are in this set, and an ignored signal stays ignored across the exec:
        # every agent would ignore them (Popen's do not). sigaddset refuses them; the bits
        # are set by hand (sigset_t is an array of unsigned longs, bit sig-1).
        words = (ctypes.c_ulong * (_SIGSET_SIZE // ctypes.sizeof(ctypes.c_ulong))).from_buffer(
            default
        )
        bits = 8 * ctypes.sizeof(ctypes.c_ulong)
        for own in range(32, signal.SIGRTMIN):
            words[(own - 1) // bits] |= 1 << ((own - 1) % bits)
        ok = ok and set_flags(self.attr, ctypes.c_short(_SETSIGDEF | _SETSIGMASK | _SETSID)) == 0
        ok = ok and set_sigdefault(self.attr, default) == 0 and set_sigmask(self.attr, empty) == 0
        if not ok:
            raise Unavailable("posix_spawnattr")
        # One /dev/null for every agent's stdin (Popen's DEVNULL is read-write too).
        self.devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)

    def spawn(
        self,
        argv: list[str],
        env: tuple[BaseEnv, list[tuple[bytes, bytes]], list[bytes]],
        cwd: str | None,
        executable: str | None,
        fds: tuple[int, int, int],
    ) -> tuple[int, int]:
        """Start the agent with ``fds`` as its 0, 1, 2 (-1 for 0: /dev/null): its pid and
        start time (field 22 of its /proc stat), or OSError as Popen's (naming the command, or
        ``cwd``). ``env``: the base, the entries that differ from it, the names not set."""
        enc = os.fsencode
        actions = self._buffer(_ACTIONS_SIZE)
        self._init(actions)
        try:
            dup2 = self._dup2
            failed = (
                dup2(actions, fds[0] if fds[0] >= 0 else self.devnull, 0)
                or dup2(actions, fds[1], 1)
                or dup2(actions, fds[2], 2)
                or (self._closefrom is not None and self._closefrom(actions, 3))
            )
            moved = False
            if cwd is not None and cwd != self.home:
                moved = True
                failed = failed or self._chdir(actions, enc(cwd))
            if failed:  # an errno (ENOMEM): the child must not start without them
                raise OSError(failed, os.strerror(failed))
            args = [enc(a) for a in argv]
            # A C string ends at a NUL: Popen refuses one rather than run less than was asked.
            # Each joined, then searched once: a Python test per item was ~8 us a start.
            named = f"{cwd or ''}{executable or ''}"
            entries = b"".join([entry for _, entry in env[1]])
            if b"\0" in b"".join(args) or b"\0" in entries or "\0" in named:
                raise ValueError("embedded null byte")
            if b"=" in b"".join([name for name, _ in env[1]]):  # as Popen's check
                raise ValueError("illegal environment variable name")
            c_argv = (self._pointers * (len(args) + 1))(*args)
            base, changed, unset = env
            c_envp = self._envp(base, changed, unset)
            exe = executable if executable is not None else argv[0]
            pid = self._pid()
            saved = 0  # the first error that was not "no such file", reported before the last
            code = errno.ENOENT
            for path in _candidates(exe, _path(base, changed, unset), cwd):
                before = _now(_BOOT)
                code = self._spawn(self._byref(pid), path, actions, self.attr, c_argv, c_envp)
                if code == 0:
                    after = _now(_BOOT)
                    tick = before // _TICK_NS
                    # Both readings in one tick: the clone's (the start time) was that one.
                    start = tick if after // _TICK_NS == tick else proc_start_time(pid.value)
                    return pid.value, start
                if moved:
                    assert cwd is not None
                    _check_dir(cwd)  # the child's chdir may be what failed
                    moved = False
                if not saved and code not in _MISSING:
                    saved = code
            if moved:  # nothing to try (no such command): a missing cwd is named first
                assert cwd is not None
                _check_dir(cwd)
        finally:
            self._destroy(actions)
        code = saved or code
        raise OSError(code, os.strerror(code), exe)

    def _envp(self, base: BaseEnv, changed: list[tuple[bytes, bytes]], unset: list[bytes]) -> Any:
        """The NULL-ended array of the start's entries: the base's copied whole (one memmove,
        not one conversion an entry), then each change in its name's slot or after them."""
        if unset:  # rare: an agent's env without some of the engine's variables
            whole = list(base.whole(changed, unset).values())
            return (self._pointers * (len(whole) + 1))(*whole)
        n = len(base.entries)
        if base.array is None:
            base.array = (self._pointers * (n + 1))(*base.entries.values())
        envp = (self._pointers * (n + len(changed) + 1))()
        self._memmove(envp, base.array, n * _POINTER)
        slots = base.slots
        end = n
        for name, entry in changed:
            slot = slots.get(name)
            if slot is None:
                slot = end
                end += 1
            envp[slot] = entry  # held by envp until the start is done
        return envp


def _path(base: BaseEnv, changed: list[tuple[bytes, bytes]], unset: list[bytes]) -> bytes | None:
    """The agent's PATH (None: not set)."""
    for name, entry in changed:
        if name == b"PATH":
            return entry[5:]
    if b"PATH" in unset:
        return None
    found = base.entries.get(b"PATH")
    return found[5:] if found is not None else None


def _candidates(exe: str, path: bytes | None, cwd: str | None) -> list[bytes]:
    """What to try to exec, in order: ``exe`` itself when it has a slash, else each of the
    agent's PATH directories' (os.get_exec_path's default when it has none) that exists."""
    name = os.fsencode(exe)
    if b"/" in name:
        return [name]
    dirs = (path if path is not None else os.fsencode(os.defpath)).split(b":")
    found = []
    for d in dirs:
        path = os.path.join(d, name)
        # A missing file costs a stat, not a clone; the exec decides about the rest.
        seen = os.path.join(os.fsencode(cwd), path) if cwd is not None else path
        if os.path.lexists(seen):
            found.append(path)
    return found


def _check_dir(cwd: str) -> None:
    """Raise as Popen does when the agent cannot enter ``cwd``."""
    try:
        fd = os.open(cwd, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise OSError(e.errno, e.strerror, cwd) from None
    os.close(fd)
    if not os.access(cwd, os.X_OK):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), cwd)


def proc_start_time(pid: int) -> int:
    """Field 22 of /proc/PID/stat (0: unreadable): an agent's start, told from a reused pid.
    Read once posix_spawn (or Popen) has returned: the process is the agent itself, and the
    keeper alone reaps it."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
        return int(raw[raw.rfind(b")") + 1 :].split()[19])
    except (OSError, IndexError, ValueError):
        return 0
