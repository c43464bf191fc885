"""glasstorch.multiprocessing: tensors shared between processes, spawn, Hogwild.

The functions that run in child processes are in multiprocessing_children.py,
which a ``spawn`` child imports without PyTorch. Every queue read has a timeout,
so a bug shows as an error, not a hang.
"""

from __future__ import annotations

import importlib
import multiprocessing as std_multiprocessing
import pickle
import queue

import numpy as np
import pytest
from cuda_support import requires_cuda
from multiprocessing_children import (
    MULTI_THREADED_PARENT,
    add_one,
    double_in_place,
    exit_with_three,
    fail_in_rank_one,
    hogwild_train,
    run_script,
    send_back_new_tensor,
    write_rank,
    write_second_view,
    write_through_view,
)
from oracle import needs_torch, torch

import glasstorch as gt
import glasstorch.multiprocessing as mp
from glasstorch.multiprocessing import reductions, shared_memory

pytestmark = [
    pytest.mark.multiprocessing,
    pytest.mark.cpu_only("storages moved to shared host memory and sent to child processes"),
]

SAFETY = 60  # seconds: a child that should never take this long
START_METHODS = ["fork", "spawn"]


# ------------------------------------------------------------- share_memory_
def test_share_memory_moves_the_storage_in_place():
    x = gt.arange(12.0).reshape(3, 4)
    view = x.t()[1:]
    before = x.data_ptr()
    assert not x.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and view.is_shared()  # a view shares its base's storage
    assert x.data_ptr() != before  # the elements moved ...
    assert x.tolist() == np.arange(12.0).reshape(3, 4).tolist()  # ... unchanged
    assert view.stride() == (1, 4) and view.storage_offset() == 1  # geometry kept
    assert view.data_ptr() == x.data_ptr() + 4  # 1 element (float32) further
    x.share_memory_()  # already shared: a no-op
    assert view.data_ptr() == x.data_ptr() + 4
    block = shared_memory.shared_block_of(x)
    assert block is not None and len(block) == 12 * 4


def test_kernels_see_the_moved_storage():
    x = gt.ones(4)
    y = x * 2  # the kernel view of x is made (and cached) here
    x.share_memory_()
    x.add_(1)  # must write into the shared block, not the old buffer
    assert x.tolist() == [2.0] * 4 and y.tolist() == [2.0] * 4
    assert np.frombuffer(shared_memory.shared_block_of(x), dtype=np.float32).tolist() == [2.0] * 4


def test_empty_and_scalar_tensors_can_be_shared():
    assert gt.empty(0).share_memory_().is_shared()
    s = gt.tensor(3).share_memory_()
    assert s.is_shared() and s.item() == 3


def test_storage_methods():
    x = gt.zeros(3)
    storage = x.untyped_storage()
    assert not storage.is_shared()
    assert storage.share_memory_() is storage and storage.is_shared() and x.is_shared()


def test_numpy_arrays_keep_the_old_memory_as_in_pytorch():
    array = np.zeros(3, dtype=np.float32)
    t = gt.from_numpy(array).share_memory_()
    t.add_(1)
    assert array.tolist() == [0.0] * 3 and t.tolist() == [1.0] * 3


@needs_torch
def test_share_memory_agrees_with_pytorch():
    for lib in (gt, torch):
        x = lib.arange(6.0)
        view = x[2:]
        x.share_memory_()
        assert view.is_shared() and view.data_ptr() == x.data_ptr() + 8
        array = np.zeros(2, dtype=np.float32)
        assert not np.shares_memory(lib.from_numpy(array).share_memory_().numpy(), array)


def test_module_share_memory_and_training_after_it():
    model = gt.nn.Linear(3, 2)
    optimizer = gt.optim.SGD(model.parameters(), lr=0.1)
    model(gt.ones(1, 3)).sum().backward()
    optimizer.step()  # optimizer kernels have cached views of the old buffers
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())
    assert all(p.grad.is_shared() for p in model.parameters())
    weight = model.weight.detach().clone()
    optimizer.step()  # writes into the shared blocks
    block = np.frombuffer(shared_memory.shared_block_of(model.weight), dtype=np.float32)
    assert np.allclose(block.reshape(2, 3), (weight - 0.1 * model.weight.grad).numpy())


# ------------------------------------------------------------------ pickling
def test_pickled_tensor_is_a_small_handle():
    t = gt.zeros(256, 1024)  # 1 MiB
    payload = reductions.dumps(t)
    assert len(payload) < 1000 and t.is_shared()
    out = pickle.loads(payload)
    assert out.data_ptr() == t.data_ptr()  # in this process: the very same storage


@pytest.mark.parametrize(
    "make",
    [
        lambda: gt.arange(12.0).reshape(3, 4),
        lambda: gt.arange(12).reshape(3, 4).t(),
        lambda: gt.arange(12.0).reshape(3, 4)[:, ::2],
        lambda: gt.tensor([1.0, 2.0]).expand(3, 2),
        lambda: gt.arange(10)[3:7],
        lambda: gt.zeros(0, 3),
        lambda: gt.tensor(True),
        lambda: gt.tensor([[1, 2]], dtype=gt.uint8),
    ],
    ids=["contiguous", "transposed", "stepped", "expanded", "offset", "empty", "scalar", "uint8"],
)
def test_layouts_survive_pickling(make):
    t = make()
    out = pickle.loads(reductions.dumps(t))
    assert out.dtype == t.dtype and out.shape == t.shape and out.tolist() == t.tolist()
    assert out.stride() == t.stride() and out.storage_offset() == t.storage_offset()


def test_requires_grad_crosses_only_on_leaves():
    leaf = gt.ones(2, requires_grad=True)
    assert pickle.loads(reductions.dumps(leaf)).requires_grad
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        reductions.dumps(leaf * 2)


def test_parameters_stay_parameters():
    param = gt.nn.Parameter(gt.ones(2))
    out = pickle.loads(reductions.dumps(param))
    assert isinstance(out, gt.nn.Parameter) and out.requires_grad and out.is_shared()


# ------------------------------------------------------------ across processes
@pytest.mark.parametrize("method", START_METHODS)
def test_child_in_place_write_is_seen_by_the_parent(method):
    shared = gt.zeros(4).share_memory_()
    context = mp.get_context(method)
    child = context.Process(target=add_one, args=(0, shared))
    child.start()
    child.join(SAFETY)
    assert child.exitcode == 0
    assert shared.tolist() == [1.0] * 4


@pytest.mark.parametrize("method", START_METHODS)
def test_queue_moves_a_tensor_to_shared_memory_and_keeps_its_view(method):
    context = mp.get_context(method)
    inbox, outbox = context.Queue(), context.Queue()
    base = gt.zeros(3, 4)
    view = base.t()[1:, ::2]  # strides (1, 8), offset 1
    child = context.Process(target=write_through_view, args=(inbox, outbox))
    child.start()
    inbox.put(view)
    stride, offset = outbox.get(timeout=SAFETY)
    child.join(SAFETY)
    assert base.is_shared()  # sending moved the sender's storage
    assert (stride, offset) == (view.stride(), view.storage_offset()) == ((1, 8), 1)
    expected = np.zeros((3, 4), dtype=np.float32)
    expected.T[1:, ::2] = 7
    assert base.tolist() == expected.tolist()


def test_two_views_in_one_message_share_one_storage():
    context = mp.get_context("fork")
    inbox, outbox = context.Queue(), context.Queue()
    whole = gt.zeros(3)
    child = context.Process(target=write_second_view, args=(inbox, outbox))
    child.start()
    inbox.put((whole, whole[1:]))
    assert outbox.get(timeout=SAFETY) == 9.0
    child.join(SAFETY)
    assert whole.tolist() == [0.0, 9.0, 0.0]


def test_a_child_sends_a_tensor_back():
    context = mp.get_context("fork")
    queue, received = context.SimpleQueue(), context.Event()
    child = context.Process(target=send_back_new_tensor, args=(queue, received))
    child.start()
    out = queue.get()
    received.set()
    child.join(SAFETY)
    assert out.is_shared() and out.stride() == (1, 3)
    assert out.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_pool_shares_tensors_with_its_workers():
    tensors = [gt.ones(3), gt.arange(3.0)]
    with mp.get_context("fork").Pool(2) as pool:
        sums = pool.map(double_in_place, tensors)
    assert sums == [6.0, 6.0]
    assert [t.tolist() for t in tensors] == [[2.0] * 3, [0.0, 2.0, 4.0]]


def test_standard_multiprocessing_queues_share_too():
    # The rules are registered with multiprocessing's own pickler, as in PyTorch.
    context = std_multiprocessing.get_context("fork")
    queue, received = context.Queue(), context.Event()
    child = context.Process(target=send_back_new_tensor, args=(queue, received))
    child.start()
    out = queue.get(timeout=SAFETY)
    received.set()
    child.join(SAFETY)
    assert out.is_shared()


# ------------------------------------------------------------ queues check in put
def test_queue_put_raises_for_an_item_it_cannot_send():
    # A plain multiprocessing.Queue would drop these in its feeder thread and
    # leave the consumer waiting; glasstorch's queues raise in put.
    x = gt.ones(3, requires_grad=True)
    for q in [mp.Queue(), mp.JoinableQueue(), mp.get_context("fork").Queue()]:
        with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
            q.put({"batch": [x * 2]})
        with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
            q.put(lambda: 0)
        q.put(x.detach())  # nothing was queued by the failed puts: this is first
        assert q.get(timeout=SAFETY).tolist() == [1.0, 1.0, 1.0]
        with pytest.raises(queue.Empty):
            q.get(timeout=0.1)


def test_the_check_moves_nothing_to_shared_memory():
    x = gt.arange(4.0)
    reductions.check_can_send({"x": x, "view": x[1:]})
    assert not x.is_shared()
    with pytest.raises(RuntimeError, match="non-leaf"):
        reductions.check_can_send([gt.ones(2), gt.ones(2, requires_grad=True) + 1])


def test_contexts_are_multiprocessings_with_checked_queues():
    for method in START_METHODS:
        context = mp.get_context(method)
        assert isinstance(context, type(std_multiprocessing.get_context(method)))
        assert context.get_start_method() == method
        assert isinstance(context.Queue(), mp.Queue)
        assert isinstance(context.JoinableQueue(), mp.JoinableQueue)
    with pytest.raises(ValueError, match="cannot find context"):
        mp.get_context("teleport")


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("method", START_METHODS)
def test_cuda_tensor_on_a_queue_raises_in_put(method):
    t = gt.ones(3, device="cuda")
    q = mp.get_context(method).Queue()
    for item in [t, (gt.zeros(2), {"t": t[1:]})]:
        with pytest.raises(TypeError, match="Cannot send a CUDA tensor to another process") as info:
            q.put(item)
        assert ".cpu()" in str(info.value)
    q.put(t.cpu())  # the way the message gives: a CPU copy travels
    assert q.get(timeout=SAFETY).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError, match="Cannot send a CUDA tensor"):
        mp.SimpleQueue().put(t)  # a SimpleQueue and a Pipe pickle in the caller anyway


@pytest.mark.cuda
@requires_cuda
def test_cuda_tensor_on_a_plain_multiprocessing_queue_raises_in_get():
    """A plain ``multiprocessing.Queue`` pickles in its feeder thread, where an
    error is only printed: the tensor travels as a refusal instead, so the
    receiver's ``get`` raises the message rather than waiting forever."""
    import multiprocessing

    q = multiprocessing.get_context("fork").Queue()
    q.put(gt.ones(3, device="cuda"))  # nothing can be checked here, in the caller
    with pytest.raises(TypeError, match="Cannot send a CUDA tensor to another process"):
        q.get(timeout=SAFETY)
    q.put(gt.ones(2, device="cuda").untyped_storage())
    with pytest.raises(TypeError, match="Cannot send a CUDA tensor"):
        q.get(timeout=SAFETY)
    q.put(gt.ones(2))  # the queue still works
    assert q.get(timeout=SAFETY).tolist() == [1.0, 1.0]


# ------------------------------------------------------- kernels after fork()
# Each program's parent first runs a matrix product on two or more threads, so
# that the fast tier's OpenMP pool exists when it forks. run_script kills the
# program and its children if they hang.
OS_FORK = (
    MULTI_THREADED_PARENT
    + """
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    child = {"same": bool(gt.equal(a @ a, expected)), "threads": gt.get_num_threads(),
             "os_threads": os_threads()}
    gt.set_num_threads(3)
    child["threads_after_set"] = gt.get_num_threads()
    child["same_after_set"] = bool(gt.equal(a @ a, expected))
    os.write(write_end, json.dumps(child).encode())
    os._exit(0)
os.close(write_end)
with os.fdopen(read_end) as pipe:
    child = json.load(pipe)
_, status = os.waitpid(pid, 0)
parent["same_after_fork"] = bool(gt.equal(a @ a, expected))
print(json.dumps({"parent": parent, "child": child, "status": status}))
"""
)


def test_os_fork_child_computes_after_a_multi_threaded_parent():
    out = run_script(OS_FORK)
    parent, child = out["parent"], out["child"]
    assert out["status"] == 0 and parent["threads"] >= 2
    if parent["pool"] and parent["os_threads"] > 0:
        assert parent["os_threads"] >= 2  # the product really ran on the pool
    # The child keeps the parent's thread count, gets the parent's numbers,
    # and can change the count; the parent goes on computing after the fork.
    assert child["same"] and child["threads"] == parent["threads"]
    if parent["pool"] and child["os_threads"] > 0:
        assert child["os_threads"] >= 2  # a fresh pool of its own
    assert child["threads_after_set"] == 3 and child["same_after_set"]
    assert parent["same_after_fork"]


MULTIPROCESSING_FORK = (
    MULTI_THREADED_PARENT
    + """
import glasstorch.multiprocessing as mp

def product_into(a, out, threads):
    out.copy_(a @ a)
    threads[0] = gt.get_num_threads()

context = mp.get_context("fork")
out, threads = gt.zeros(n, n).share_memory_(), gt.zeros(1).share_memory_()
process = context.Process(target=product_into, args=(a, out, threads))
process.start()
process.join(50)
print(json.dumps({"parent": parent, "exitcode": process.exitcode,
                  "same": bool(gt.equal(out, expected)), "child_threads": threads.item()}))
"""
)


def test_multiprocessing_fork_child_computes_after_a_multi_threaded_parent():
    out = run_script(MULTIPROCESSING_FORK)
    assert out["exitcode"] == 0 and out["parent"]["threads"] >= 2
    assert out["same"] and out["child_threads"] == out["parent"]["threads"]


# ---------------------------------------------------------------------- spawn
@pytest.mark.parametrize("method", START_METHODS)
def test_spawn_passes_the_index_and_args(method):
    out = gt.zeros(2).share_memory_()
    assert mp.start_processes(write_rank, args=(out,), nprocs=2, start_method=method) is None
    assert out.tolist() == [10.0, 11.0]


def test_spawn_reraises_a_child_error_with_its_traceback():
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.start_processes(fail_in_rank_one, args=("bad input",), nprocs=2, start_method="fork")
    error = info.value
    assert error.error_index == 1 and error.pid > 0
    message = str(error)
    assert message.startswith("\n\n-- Process 1 terminated with the following error:\n")
    assert "Traceback (most recent call last)" in message
    assert "ValueError: bad input" in message and "fail_in_rank_one" in message


def test_spawn_reports_an_exit_code():
    with pytest.raises(mp.ProcessExitedException, match="^process 0 terminated with exit code 3$"):
        mp.start_processes(exit_with_three, nprocs=1, start_method="fork")


def test_spawn_without_join_returns_a_context():
    out = gt.zeros(2).share_memory_()
    context = mp.spawn(write_rank, args=(out,), nprocs=2, join=False)
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    while not context.join(timeout=SAFETY):
        pass
    assert out.tolist() == [10.0, 11.0]


@needs_torch
def test_spawn_exceptions_mirror_pytorchs():
    theirs = importlib.import_module("torch.multiprocessing.spawn")
    for name in ["ProcessException", "ProcessRaisedException", "ProcessExitedException"]:
        ours = getattr(mp, name)
        assert [c.__name__ for c in ours.__mro__] == [
            c.__name__ for c in getattr(theirs, name).__mro__
        ]
    error = mp.ProcessExitedException("m", 1, 2, 3, "SIGKILL")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.error_index, copy.pid, copy.exit_code, copy.signal_name) == (1, 2, 3, "SIGKILL")


# ------------------------------------------------------------------- Hogwild
@pytest.mark.parametrize("method", START_METHODS)
def test_hogwild_training_updates_the_shared_model(method):
    gt.manual_seed(0)
    x = gt.randn(32, 3)
    y = x @ gt.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = gt.nn.Linear(3, 1)
    model.share_memory()
    loss_before = gt.nn.functional.mse_loss(model(x), y).item()
    mp.start_processes(hogwild_train, args=(model, x, y, 25), nprocs=2, start_method=method)
    loss_after = gt.nn.functional.mse_loss(model(x), y).item()
    # Two workers took 25 steps each on the parent's parameters.
    assert loss_after < 0.5 * loss_before


# ------------------------------------------------------------------- strategy
def test_sharing_strategies():
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="file_descriptor"):
        mp.set_sharing_strategy("file_system")


def test_start_method_functions_are_multiprocessings():
    assert mp.get_start_method(allow_none=True) in (None, *mp.get_all_start_methods())
    assert mp.Process is std_multiprocessing.Process
