"""A real two-node Ray cluster on this machine, for the Ray executor's tests.

``ray start --head`` and a second ``ray start --address`` (each node with its own custom
resource and node labels, so a task can be placed on one of them), in a short-lived temp dir
of their own. Each ``ray start`` runs in a process group of its own: teardown ends those groups
and the workers that carry the cluster's session dir, and nothing else (``ray stop`` would end
every Ray on the machine, a developer's own cluster too).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT = 120.0
COMMON = [
    "--num-cpus=2",
    "--object-store-memory=80000000",
]  # seconds for `ray start` on a loaded 2-core machine
# Node death is noticed within about a second (Ray's default is 15 s or more).
HEAD_ENV = {
    "RAY_health_check_initial_delay_ms": "0",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "2",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Node:
    group: int  # the process group of its `ray start`
    node_id: str = ""


@dataclass
class RayCluster:
    temp: Path
    address: str = ""
    client_port: int = 0
    head: Node = field(default_factory=lambda: Node(0))
    worker: Node = field(default_factory=lambda: Node(0))

    @property
    def client_address(self) -> str:
        return f"ray://{self.address.rsplit(':', 1)[0]}:{self.client_port}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **HEAD_ENV}

    def _start(self, *args: str) -> Node:
        proc = subprocess.Popen(
            [RAY, "start", "--disable-usage-stats", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env(),
            start_new_session=True,  # its daemons keep this group: teardown ends it
        )
        node = Node(proc.pid)
        out, _ = proc.communicate(timeout=START_TIMEOUT)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start {' '.join(args)} failed:\n{out}")
        return node

    def _start_head(self, port: int) -> None:
        if not self.client_port:
            self.client_port = _free_port()
        self.head = self._start(
            "--head",
            "--include-dashboard=false",
            f"--port={port}",
            # Ray Client (`ray://`); its own port, not the default 10001 another cluster has.
            f"--ray-client-server-port={self.client_port}",
            f"--temp-dir={self.temp}",
            '--resources={"head_box": 2, "shared": 1}',
            "--labels=zone=us",
            *COMMON,
        )

    def start(self) -> None:
        port = _free_port()
        self._start_head(port)
        ip = (self.temp / "ray_current_cluster").read_text().strip().rsplit(":", 1)[0]
        self.address = f"{ip}:{port}"
        self.worker = self._start(
            f"--address={self.address}",
            '--resources={"worker_box": 2, "shared": 1}',
            "--labels=zone=eu,box=gpu",  # a task's `resources: {labels:}` selects this node
            *COMMON,
        )
        self._find_nodes()

    def stop_head(self) -> None:
        """What `ray stop` does on the head's machine (TERM, then KILL), to this cluster's
        head only: its GCS and raylet go, and with them the cluster. The second node's
        processes are ended too (they would end themselves within a minute): a new head at
        this address is a new cluster, and `ray start` refuses while processes of the old
        one still name it."""
        group, self.head = self.head.group, Node(0)
        for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, sig)
            deadline = time.monotonic() + grace
            while _members(group, live=True) and time.monotonic() < deadline:
                time.sleep(0.05)  # their exit: nothing to wait on but their pids
        self._end_leftovers()

    def restart_head(self) -> None:
        """A new head at the same address (a new cluster: new node ids, no worker node)."""
        self._start_head(int(self.address.rsplit(":", 1)[1]))
        self._find_nodes()

    def _find_nodes(self) -> None:
        nodes = json.loads(
            subprocess.run(
                [sys.executable, "-c", _NODES, self.address],
                capture_output=True,
                text=True,
                check=True,
                timeout=START_TIMEOUT,
                env=self.env(),
            ).stdout.splitlines()[-1]
        )
        for node_id, resources in nodes.items():
            if "head_box" in resources:
                self.head.node_id = node_id
            elif "worker_box" in resources:
                self.worker.node_id = node_id

    def raylet_pids(self, node: Node) -> list[int]:
        return [p for p in _members(node.group) if _comm(p) == "raylet"]

    def kill_worker_node(self) -> None:
        """SIGKILL the second node's raylet: to the cluster, that node died."""
        for pid in self.raylet_pids(self.worker):
            os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        self._end_leftovers()
        shutil.rmtree(self.temp, ignore_errors=True)

    def _end_leftovers(self) -> None:
        for node in (self.worker, self.head):
            if node.group:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.group, signal.SIGKILL)
        self.worker = Node(0)
        # Workers run in sessions of their own; they carry this cluster's session dir, or
        # its address.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = _with_arg(str(self.temp))
            left += _with_arg(f"--gcs-address={self.address}") if self.address else []
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)  # their exit: nothing to wait on but their pids


_NODES = """
import json, sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
print(json.dumps({n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}))
"""


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _members(pgid: int, live: bool = False) -> list[int]:
    """The processes of group ``pgid`` (``live``: not those that exited, unreaped)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat[stat.rfind(")") + 2 :].split()
                if int(fields[2]) == pgid and not (live and fields[0] in "ZX"):
                    out.append(int(entry))
    return out


def _with_arg(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if text.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
    return found


def start_cluster() -> RayCluster:
    # Short: Ray puts Unix sockets under it (108 bytes at most for their paths).
    cluster = RayCluster(Path(tempfile.mkdtemp(prefix="tray", dir="/tmp")))
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
