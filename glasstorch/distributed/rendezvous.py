"""torchrun-style multi-node starts: every node runs the launcher, node 0 runs ``mpiexec``.

With torchrun, the same command runs on every node (``--nnodes 2 --node-rank
K --master-addr node0``), and each node starts its own ranks. An MPI job is
started from one place instead: ``mpiexec`` on one node starts the ranks of
every node (over ssh) so that they share one ``MPI_COMM_WORLD``. The two meet
here:

1. node 0's launcher listens on ``MASTER_ADDR:MASTER_PORT``; every other
   node's launcher connects and says its node rank and host name (the rendezvous);
2. node 0 starts the whole job with ``mpiexec --host node0:N,node1:N,...``, in
   node-rank order, so global ranks fill node 0 first, as torchrun numbers them;
3. when the job ends, node 0 sends its exit code to every other node's
   launcher, which exits with it.

So the nodes must be able to reach node 0's port, and node 0 must be able to
start processes on the others the way its MPI does (passwordless ssh, or the
cluster's own mechanism). With a host list (``--hosts``/``--hostfile``) step 1
is skipped: one launcher on one node is enough.
"""

from __future__ import annotations

import json
import socket
import time

RENDEZVOUS_TIMEOUT = 900.0  # seconds to wait for every node, as torchrun's default

_followers: list[socket.socket] = []  # node 0: the other nodes' connections, until release


def _send(connection: socket.socket, message: dict) -> None:
    connection.sendall(json.dumps(message).encode() + b"\n")


def _receive(connection: socket.socket) -> dict:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk:
            raise ConnectionError("the other launcher closed the connection")
        data += chunk
    return json.loads(data)


def gather_nodes(args, host: str, timeout: float = RENDEZVOUS_TIMEOUT) -> list[str]:
    """On node 0: wait for every other node; return all host names in node-rank order."""
    server = socket.create_server(("", args.master_port), reuse_port=False)
    server.settimeout(timeout)
    hosts = {0: host}
    try:
        while len(hosts) < args.nnodes:
            connection, _ = server.accept()
            hello = _receive(connection)
            rank = int(hello["node_rank"])
            if rank in hosts or not 0 < rank < args.nnodes:
                _send(connection, {"error": f"node rank {rank} is taken or out of range"})
                connection.close()
                continue
            hosts[rank] = hello["host"]
            _followers.append(connection)
    except TimeoutError:
        raise TimeoutError(
            f"rendezvous: {len(hosts)} of {args.nnodes} nodes reached "
            f"{args.master_addr}:{args.master_port} within {timeout:.0f} s"
        ) from None
    finally:
        server.close()
    return [hosts[rank] for rank in range(args.nnodes)]


def release_nodes(code: int) -> None:
    """On node 0, after the job: tell every other node's launcher the exit code."""
    while _followers:
        connection = _followers.pop()
        try:
            _send(connection, {"exit_code": code})
        except OSError:
            pass
        connection.close()


def follow_node_zero(args, host: str, timeout: float = RENDEZVOUS_TIMEOUT) -> int:
    """On another node: join node 0's rendezvous, then wait for the job's exit code."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            connection = socket.create_connection((args.master_addr, args.master_port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"rendezvous: could not reach node 0 at {args.master_addr}:"
                    f"{args.master_port} within {timeout:.0f} s"
                ) from None
            time.sleep(0.5)
    connection.settimeout(None)  # the job may run for days
    _send(connection, {"node_rank": args.node_rank, "host": host})
    answer = _receive(connection)
    connection.close()
    if "error" in answer:
        raise RuntimeError(f"rendezvous: {answer['error']}")
    return int(answer["exit_code"])
