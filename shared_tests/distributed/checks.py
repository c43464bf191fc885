"""Checks that run on every rank of one 2-rank job, started by ``test_distributed.py``.

Starting a job costs about a second (mpiexec, MPI's wire-up, importing
glasstorch), so the test starts one job and this script runs every check in
it, in order, on both ranks; each rank writes ``rank<N>.json`` (check name ->
"ok" or the traceback) into the folder named by its first argument, and the
test reports one result per check. Every check asserts values on its rank.

Usage: ``python -m glasstorch.distributed.run --nproc-per-node 2 checks.py OUT_DIR [device]``
with ``device`` ``cpu`` (the default) or ``cuda`` (tensors on the simulated GPU).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import traceback
from pathlib import Path

import numpy as np

import glasstorch as torch
import glasstorch.distributed as dist

CHECKS = {}
DEVICE = sys.argv[2] if len(sys.argv) > 2 else "cpu"


def check(function):
    """Register a check: ``function(rank, world)`` asserts what its rank should see."""
    CHECKS[function.__name__] = function
    return function


def raises(error_type, call, match: str):
    """Assert that ``call()`` raises ``error_type`` with ``match`` in its message."""
    try:
        call()
    except error_type as error:
        assert match in str(error), f"{match!r} not in {str(error)!r}"
        return
    raise AssertionError(f"{call} did not raise {error_type.__name__}")


def tensor(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, device=DEVICE)


# ------------------------------------------------------------------ the world
@check
def launcher_environment(rank, world):
    assert world == 2 and dist.get_world_size() == 2
    assert int(os.environ["RANK"]) == rank == dist.get_rank()
    assert os.environ["WORLD_SIZE"] == "2" and os.environ["LOCAL_WORLD_SIZE"] == "2"
    assert os.environ["LOCAL_RANK"] == str(rank) and os.environ["GROUP_RANK"] == "0"
    assert os.environ["MASTER_ADDR"] and os.environ["MASTER_PORT"].isdigit()
    assert dist.is_initialized() and dist.is_available()
    assert dist.get_backend() == "mpi"  # the truth, though the job asked for "gloo"
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None
    assert tensor([1.0]).device.type == DEVICE  # the checks below run on this device


# ---------------------------------------------------------------- all_reduce
@check
def all_reduce_every_op(rank, world):
    values = {0: [1.0, -2.0, 3.0], 1: [4.0, 5.0, -6.0]}
    expected = {
        dist.ReduceOp.SUM: [5.0, 3.0, -3.0],
        dist.ReduceOp.AVG: [2.5, 1.5, -1.5],
        dist.ReduceOp.PRODUCT: [4.0, -10.0, -18.0],
        dist.ReduceOp.MIN: [1.0, -2.0, -6.0],
        dist.ReduceOp.MAX: [4.0, 5.0, 3.0],
    }
    for op, result in expected.items():
        for dtype in (torch.float32, torch.float64):
            t = tensor(values[rank], dtype)
            assert dist.all_reduce(t, op=op) is None
            assert t.tolist() == result, (op, dtype, t.tolist())
            assert t.dtype == dtype


@check
def all_reduce_integers_and_bools(rank, world):
    t = tensor([[rank + 1, -7], [2**40, 3]], torch.int64)
    dist.all_reduce(t)
    assert t.tolist() == [[3, -14], [2**41, 6]]
    a = tensor([-7, 7, 5], torch.int32)
    dist.all_reduce(a, op=dist.ReduceOp.AVG)  # integer average rounds toward zero
    assert a.tolist() == [-7, 7, 5]
    bits = tensor([0b1100 if rank == 0 else 0b1010], torch.int64)
    for op, want in ((dist.ReduceOp.BAND, 0b1000), (dist.ReduceOp.BOR, 0b1110)):
        b = bits.clone()
        dist.all_reduce(b, op=op)
        assert b.tolist() == [want]
    flags = tensor([True, rank == 0, False], torch.bool)
    dist.all_reduce(flags)  # sum of bools: logical or
    assert flags.tolist() == [True, True, False]
    flags = tensor([True, rank == 0, False], torch.bool)
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)  # logical and
    assert flags.tolist() == [True, False, False]
    u = tensor([200, 3], torch.uint8)
    dist.all_reduce(u, op=dist.ReduceOp.MAX)
    assert u.tolist() == [200, 3]


@check
def all_reduce_is_in_place_and_zero_copy(rank, world):
    if DEVICE != "cpu":
        return
    base = torch.zeros(10)
    view = base[2:8]  # a contiguous view with an offset
    view.fill_(rank + 1.0)
    pointer = view.data_ptr()
    array = base.numpy()  # shares the storage
    dist.all_reduce(view)
    assert view.data_ptr() == pointer
    assert base.tolist() == [0, 0, 3, 3, 3, 3, 3, 3, 0, 0]  # written into the storage itself
    assert array[2:8].tolist() == [3.0] * 6
    from glasstorch.distributed.mpi_backend import HostBuffer

    buffer = HostBuffer(view, read=True, write=True)
    assert not buffer.staged  # MPI is handed the storage, no copy
    assert buffer.array.ctypes.data == view.data_ptr()
    assert np.shares_memory(buffer.array, array)


@check
def all_reduce_non_contiguous(rank, world):
    x = (torch.arange(12.0, device=DEVICE).reshape(3, 4) * (rank + 1)).t()
    assert not x.is_contiguous()
    dist.all_reduce(x)
    assert x.tolist() == (np.arange(12.0).reshape(3, 4) * 3).T.tolist()
    base = torch.zeros(4, 4, device=DEVICE)
    column = base[:, 1]
    column.fill_(float(rank + 1))
    dist.all_reduce(column)
    assert base[:, 1].tolist() == [3.0] * 4 and base[:, 0].tolist() == [0.0] * 4


@check
def all_reduce_async(rank, world):
    t = tensor([float(rank)] * 1000)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True
    assert work.is_completed() and work.is_success() and work.exception() is None
    assert t.tolist() == [1.0] * 1000
    assert work.result()[0] is t
    future = dist.all_reduce(t, async_op=True).get_future()
    doubled = future.then(lambda f: f.value()[0] * 2)
    assert doubled.wait().tolist() == [4.0] * 1000 and future.done()
    assert t.tolist() == [2.0] * 1000
    # Several in flight at once complete in order.
    tensors = [tensor([float(rank + i)]) for i in range(5)]
    works = [dist.all_reduce(x, async_op=True) for x in tensors]
    synchronous = tensor([1.0])
    dist.all_reduce(synchronous)  # queued behind them
    for work in works:
        work.wait()
    assert [x.item() for x in tensors] == [1.0 + 2 * i for i in range(5)]
    assert synchronous.item() == 2.0


@check
def computation_overlaps_async_all_reduce(rank, world):
    big = torch.full((1 << 20,), float(rank + 1))
    work = dist.all_reduce(big, async_op=True)
    product = torch.ones(64, 64) @ torch.ones(64, 64)  # the main thread computes meanwhile
    work.wait()
    assert product[0, 0].item() == 64.0
    assert big[0].item() == 3.0 and big[-1].item() == 3.0


# ----------------------------------------------------- the other collectives
@check
def broadcast_from_each_rank(rank, world):
    for src in range(world):
        t = tensor([float(rank * 10 + k) for k in range(4)])
        dist.broadcast(t, src=src)
        assert t.tolist() == [float(src * 10 + k) for k in range(4)]
    t = tensor([rank], torch.int64)
    work = dist.broadcast(t, src=1, async_op=True)
    work.wait()
    assert t.tolist() == [1]


@check
def reduce_to_a_root(rank, world):
    t = tensor([rank + 1.0, 2.0])
    dist.reduce(t, dst=1)
    if rank == 1:
        assert t.tolist() == [3.0, 4.0]
    t = tensor([rank + 1.0, 2.0])
    dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
    if rank == 0:
        assert t.tolist() == [2.0, 2.0]


@check
def all_gather_lists_and_tensors(rank, world):
    outputs = [torch.empty(2, 2, dtype=torch.int64, device=DEVICE) for _ in range(world)]
    dist.all_gather(outputs, tensor([[rank, 1], [2, rank * 5]], torch.int64))
    assert [o.tolist() for o in outputs] == [[[0, 1], [2, 0]], [[1, 1], [2, 5]]]
    concatenated = torch.empty(4, device=DEVICE)
    dist.all_gather_into_tensor(concatenated, tensor([rank, rank + 0.5]))
    assert concatenated.tolist() == [0.0, 0.5, 1.0, 1.5]
    stacked = torch.empty(world, 2, device=DEVICE)
    work = dist.all_gather_into_tensor(stacked, tensor([rank, -rank]), async_op=True)
    work.wait()
    assert stacked.tolist() == [[0.0, 0.0], [1.0, -1.0]]


@check
def reduce_scatter(rank, world):
    out = torch.empty(2, device=DEVICE)
    dist.reduce_scatter_tensor(out, tensor([1.0, 2.0, 3.0, 4.0]) * (rank + 1))
    assert out.tolist() == ([3.0, 6.0] if rank == 0 else [9.0, 12.0])
    out = torch.empty(1, device=DEVICE)
    dist.reduce_scatter_tensor(out, tensor([1.0, 5.0]) + rank, op=dist.ReduceOp.AVG)
    assert out.tolist() == ([1.5] if rank == 0 else [5.5])


@check
def gather_and_scatter(rank, world):
    mine = tensor([rank * 1.5, 7.0])
    if rank == 1:
        into = [torch.zeros(2, device=DEVICE) for _ in range(world)]
        dist.gather(mine, into, dst=1)
        assert [t.tolist() for t in into] == [[0.0, 7.0], [1.5, 7.0]]
    else:
        dist.gather(mine, dst=1)
    received = torch.zeros(3, dtype=torch.int64, device=DEVICE)
    if rank == 0:
        parts = [tensor([1, 2, 3], torch.int64), tensor([4, 5, 6], torch.int64)]
        dist.scatter(received, parts, src=0)
    else:
        dist.scatter(received, src=0)
    assert received.tolist() == ([1, 2, 3] if rank == 0 else [4, 5, 6])


@check
def send_and_recv(rank, world):
    if rank == 0:
        dist.send(tensor([1.0, 2.0]), dst=1)
        back = torch.zeros(3, dtype=torch.int64, device=DEVICE)
        assert dist.recv(back, src=1, tag=7) == 1
        assert back.tolist() == [9, 8, 7]
    else:
        got = torch.zeros(2, device=DEVICE)
        assert dist.recv(got) == 0  # from any source
        assert got.tolist() == [1.0, 2.0]
        dist.send(tensor([9, 8, 7], torch.int64), dst=0, tag=7)
    # Both ranks send first: the non-blocking sends cannot deadlock.
    outgoing = torch.full((1 << 18,), float(rank), device=DEVICE)
    incoming = torch.zeros(1 << 18, device=DEVICE)
    sent = dist.isend(outgoing, dst=1 - rank)
    arriving = dist.irecv(incoming, src=1 - rank)
    sent.wait()
    arriving.wait()
    assert arriving.is_completed()
    assert incoming[0].item() == incoming[-1].item() == float(1 - rank)


@check
def barrier_and_groups(rank, world):
    dist.barrier()
    assert dist.barrier(async_op=True).wait()
    everyone = dist.new_group([0, 1])
    assert dist.get_world_size(everyone) == 2 and dist.get_rank(everyone) == rank
    assert dist.get_process_group_ranks(everyone) == [0, 1]
    only_one = dist.new_group([1])
    if rank == 1:
        assert dist.get_rank(only_one) == 0 and dist.get_world_size(only_one) == 1
        assert dist.get_global_rank(only_one, 0) == 1 and dist.get_group_rank(only_one, 1) == 0
        t = tensor([5.0])
        dist.all_reduce(t, group=only_one)
        assert t.tolist() == [5.0]
        t = tensor([4.0])
        dist.broadcast(t, src=1, group=only_one)  # src is a global rank
        assert t.tolist() == [4.0]
    else:
        assert only_one == dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(only_one) == -1 and dist.get_world_size(only_one) == -1
    t = tensor([float(rank)])
    dist.all_reduce(t, group=everyone)
    assert t.tolist() == [1.0]
    dist.destroy_process_group(everyone)


@check
def all_to_all(rank, world):
    out = torch.empty(4, device=DEVICE)
    dist.all_to_all_single(out, tensor([10.0, 11.0, 12.0, 13.0]) + 100 * rank)
    assert out.tolist() == ([10.0, 11.0, 110.0, 111.0] if rank == 0 else [12.0, 13.0, 112.0, 113.0])
    # Uneven splits of rows: rank 0 sends 1 row to itself and 2 to rank 1; rank 1 sends 3 and 1.
    send = [[1, 2], [3, 1]][rank]
    receive = [[1, 3], [2, 1]][rank]
    rows = torch.arange(float(sum(send) * 2), device=DEVICE).reshape(-1, 2) + 100 * rank
    out = torch.empty(sum(receive), 2, device=DEVICE)
    dist.all_to_all_single(out, rows, receive, send)
    expected = {0: [[0, 1], [100, 101], [102, 103], [104, 105]], 1: [[2, 3], [4, 5], [106, 107]]}
    assert out.tolist() == expected[rank]


@check
def python_objects(rank, world):
    config = [{"lr": 0.1, "rank": rank}, f"from {rank}", tensor([rank])]
    dist.broadcast_object_list(config, src=1)
    assert config[:2] == [{"lr": 0.1, "rank": 1}, "from 1"] and config[2].tolist() == [1.0]
    everyone = [None] * world
    dist.all_gather_object(everyone, ("accuracy", 0.5 + rank))
    assert everyone == [("accuracy", 0.5), ("accuracy", 1.5)]
    collected = [None] * world if rank == 0 else None
    dist.gather_object(rank * 7, collected, dst=0)
    if rank == 0:
        assert collected == [0, 7]
    mine = [None]
    dist.scatter_object_list(mine, ["a", "b"] if rank == 1 else None, src=1)
    assert mine == [["a", "b"][rank]]
    assert dist.get_node_local_rank() == rank


@check
def data_loader_workers_beside_mpi(rank, world):
    # Forked DataLoader workers of an MPI rank: they never call MPI, the rank still can.
    from glasstorch.utils.data import DataLoader, TensorDataset

    dataset = TensorDataset(torch.arange(32.0).reshape(16, 2))
    total = torch.zeros(2)
    for (batch,) in DataLoader(dataset, batch_size=4, num_workers=2):
        total += batch.sum(0)
    total = total.to(DEVICE)
    dist.all_reduce(total)
    assert total.tolist() == [480.0, 512.0]


# ---------------------------------------------------------------------- errors
@check
def argument_errors(rank, world):
    t = tensor([1.0, 2.0])
    raises(TypeError, lambda: dist.all_reduce([1, 2]), "Expected parameter `tensor` of type")
    raises(TypeError, lambda: dist.all_reduce(t, op="sum"), "must be a torch.distributed.ReduceOp")
    raises(RuntimeError, lambda: dist.broadcast(t, src=5), "invalid root rank: 5")
    raises(RuntimeError, lambda: dist.reduce(t, dst=-1), "invalid root rank: -1")
    raises(
        ValueError,
        lambda: dist.all_gather_into_tensor(torch.empty(5, device=DEVICE), t),
        "output tensor size must be equal to world_size times input tensor size",
    )
    raises(
        TypeError,
        lambda: dist.all_gather_into_tensor(torch.empty(4, dtype=torch.float64, device=DEVICE), t),
        "output tensor must have the same type as input tensor",
    )
    raises(
        ValueError,
        lambda: dist.reduce_scatter_tensor(torch.empty(2, device=DEVICE), t),
        "input tensor must be the same size as output size times world size",
    )
    raises(
        RuntimeError,
        lambda: dist.all_gather([torch.empty(2, device=DEVICE)], t),
        "invalid output tensor list at index 0 (expected length 2, got 1)",
    )
    raises(
        RuntimeError,
        lambda: dist.all_gather([torch.empty(3, device=DEVICE)] * 2, t),
        "invalid tensor size at index 0 (expected (2), got (3))",
    )
    raises(
        ValueError,
        lambda: dist.all_gather([torch.empty(2, dtype=torch.int64, device=DEVICE)] * 2, t),
        "Invalid usage of tensors with different dtypes",
    )
    raises(ValueError, lambda: dist.gather(t, None, dst=rank), "must be specified on destination")
    raises(ValueError, lambda: dist.scatter(t, None, src=rank), "must be specified on source rank")
    raises(RuntimeError, lambda: dist.scatter(t, [t], src=rank), "Incorrect input list size 1")
    raises(ValueError, lambda: dist.send(t, dst=rank), "Invalid destination rank")
    raises(ValueError, lambda: dist.recv(t, src=rank), "Invalid source rank")
    raises(ValueError, lambda: dist.new_group([0, 1, 2]), "should be less or equal to the world")
    raises(
        ValueError, lambda: dist.init_process_group(), "initialize the default process group twice"
    )
    raises(
        ValueError, lambda: dist.all_reduce(tensor([1], torch.bool), op=dist.ReduceOp.AVG), "AVG"
    )


@check
def timeout_on_collectives_that_finish(rank, world):
    group = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=30))
    t = tensor([1.0])
    dist.all_reduce(t, group=group)
    assert t.tolist() == [2.0]


@check
def collectives_in_the_profilers_chrome_trace(rank, world):
    import threading

    from glasstorch.profiler import profile

    t = tensor([1.0, 2.0])
    with profile() as prof:
        dist.all_reduce(t)
        dist.all_reduce(t, async_op=True).wait()
        dist.broadcast(t, src=0)
    trace_file = Path(sys.argv[1]) / f"trace{rank}.json"
    prof.export_chrome_trace(str(trace_file))
    events = json.loads(trace_file.read_text())["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and e["name"].startswith("mpi:")]
    assert [e["name"] for e in spans] == ["mpi:all_reduce", "mpi:all_reduce", "mpi:broadcast"]
    assert all(e["pid"] == rank for e in spans)  # one process per rank
    main = threading.main_thread().native_id
    assert spans[0]["tid"] == main and spans[1]["tid"] != main  # async: the comm thread
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names[spans[1]["tid"]].startswith("glasstorch-comm-0")
    process = [e for e in events if e["name"] == "process_name" and e["pid"] == rank]
    assert process[0]["args"]["name"] == f"rank {rank}"


def main() -> None:
    out_dir = Path(sys.argv[1])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    for name, function in CHECKS.items():
        try:
            function(rank, world)
            results[name] = "ok"
        except Exception:
            results[name] = traceback.format_exc()
    dist.destroy_process_group()
    (out_dir / f"rank{rank}.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main()
