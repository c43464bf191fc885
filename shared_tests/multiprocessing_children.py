"""Functions that run in the child processes of test_multiprocessing.py.

They live in a module of their own, which imports nothing but glasstorch, so
that a child started with ``spawn`` (which imports the module to find the
function by name) does not pay for importing PyTorch, the oracle, as the test
module does.
"""

from __future__ import annotations

import glasstorch as gt

SAFETY = 60  # seconds: a child that should never wait this long


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
