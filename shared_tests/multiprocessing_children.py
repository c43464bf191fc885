"""Functions that run in the child processes of test_multiprocessing.py.

They live in a module of their own, which imports nothing but glasstorch (and
the standard library), so that a child started with ``spawn`` (which imports
the module to find the function by name) does not pay for importing PyTorch,
the oracle, as the test module does.

:func:`run_script` runs a whole program in a fresh interpreter instead: the
fork tests need a parent that has run nothing but their own kernels, and a
child that hangs must be killed, not waited for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import glasstorch as gt

SAFETY = 60  # seconds: a child that should never wait this long

#: The start of every fork test's program: a parent that runs a matrix product
#: on two or more threads (the fast tier's OpenMP pool) before it forks.
#: ``a`` is ``n`` by ``n``; ``parent`` says how many threads it asked for,
#: whether its tier has an OpenMP pool, and how many threads the process had
#: after the product.
MULTI_THREADED_PARENT = """
import json, os
import glasstorch as gt

def os_threads():
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1

gt.set_num_threads(max(2, gt.get_num_threads()))
pool, n = False, 24  # the reference tier's pure-Python product: kept small
if str(gt.tier) == "fast":
    from glasstorch.fast import build_info
    pool, n = build_info()["openmp"], 256  # large enough to split across threads
gt.manual_seed(0)
a = gt.randn(n, n)
expected = a @ a  # on the fast tier, split across the threads of the parent's pool
parent = {"threads": gt.get_num_threads(), "pool": pool, "os_threads": os_threads()}
"""


def run_script(code: str, args: tuple[str, ...] = (), timeout: float = SAFETY) -> dict:
    """Run ``code`` with ``python -c`` (same tier, same environment; ``args`` in
    ``sys.argv[1:]``); return the JSON object its last line of output holds.

    The interpreter starts a session of its own, so on timeout it is killed
    together with every process it forked: a child that hangs fails the test
    (AssertionError) instead of hanging the suite or staying behind.
    """
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:  # all gone already
            pass
        out, err = process.communicate()
        raise AssertionError(
            f"the program did not finish in {timeout} s (a forked child hung?)\n{err}"
        ) from None
    assert process.returncode == 0, f"the program failed:\n{err}"
    return json.loads(out.strip().splitlines()[-1])


def add_one(rank, tensor):
    tensor.add_(1)


def write_through_view(inbox, outbox):
    """Receive a view, write into it, report its geometry."""
    view = inbox.get(timeout=SAFETY)
    view.fill_(7)
    outbox.put((view.stride(), view.storage_offset()))


def write_second_view(inbox, outbox):
    """Receive two views of one storage; write through one, read through the other."""
    whole, tail = inbox.get(timeout=SAFETY)
    tail[0] = 9.0
    outbox.put(whole[1].item())


def send_back_new_tensor(queue, received):
    queue.put(gt.arange(6.0).reshape(2, 3).t())
    received.wait(SAFETY)  # a sender must outlive the unpickling (it hands over the block)


def fail_in_rank_one(rank, message):
    if rank == 1:
        raise ValueError(message)


def exit_with_three(rank):
    raise SystemExit(3)


def write_rank(rank, out):
    out[rank] = rank + 10


def double_in_place(tensor):
    tensor.mul_(2)
    return tensor.sum().item()


def hogwild_train(rank, model, x, y, steps):
    """Plain SGD on the shared model: every step writes into the shared parameters."""
    optimizer = gt.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = gt.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
