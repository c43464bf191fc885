"""The gradient reducer of DistributedDataParallel: buckets, ready hooks, overlapped all-reduce.

Data-parallel training runs one copy of the model per process, each on its own
slice of the batch. After backward every process holds the gradient of *its*
loss; averaging the gradients over the processes (an all-reduce) gives every
process the gradient of the mean loss over the whole batch, so every copy takes
the same optimizer step and the copies stay identical. This module does the
averaging, following the design of Li et al., "PyTorch Distributed: Experiences
on Accelerating Data Parallel Training" (VLDB 2020), whose ideas are:

**Buckets.** An all-reduce costs a fixed start-up time (alpha: the messages'
latency, the processes agreeing that they are all there) plus a time per byte
(beta). A model has hundreds of small parameters; reducing each on its own pays
alpha hundreds of times. Reducing all of them as one tensor pays it once but
must wait for the very last gradient. Buckets sit in between: the gradients are
grouped into buckets of about ``bucket_cap_mb`` (25 MiB), each bucket is one
flat, contiguous buffer, and one all-reduce per bucket sends it.

**Reverse order.** Backward produces gradients roughly in the reverse order
in which the parameters were registered (the last layer's first). Filling the
buckets in that order means the first bucket fills first, so its all-reduce can
start while backward is still computing the earlier layers. The first bucket
is kept small (1 MiB) so that communication starts as early as possible.

**Overlap.** A hook on each parameter (``register_post_accumulate_grad_hook``)
fires as soon as the parameter's ``.grad`` is ready in backward; it copies the
gradient into its place in the bucket. When a bucket's last gradient arrives,
its all-reduce starts asynchronously (``async_op=True``: a communication thread
drives it) and backward goes on computing the other gradients meanwhile. A
callback at the end of backward (``queue_callback``) waits for the buckets
still in flight and writes the averaged values back into ``.grad``. Only the
communication that is still running when backward ends costs time.

**Order is a contract.** The processes must issue the same collectives in the
same order (MPI matches them by order). Two processes can finish gradients in a
different order, so a bucket that is full is launched only after every bucket
before it: buckets are launched strictly in index order on every process.

**Unused parameters.** A bucket waits for every one of its gradients. A
parameter that the forward pass did not use gets no gradient, its bucket never
launches, and backward ends with reductions missing. With
``find_unused_parameters=True`` the reducer walks the autograd graph from the
forward's outputs, finds the parameters it cannot reach and marks them ready at
once (their slots hold zeros). Without it the missing gradients are detected
at the next forward and reported by name.
"""

from __future__ import annotations

from glasstorch.autograd.function import AccumulateGrad
from glasstorch.autograd.variable import Variable
from glasstorch.ops.creation import zeros
from glasstorch.tensor import Tensor

#: The default bucket size (PyTorch's ``bucket_cap_mb``), in MiB.
DEFAULT_BUCKET_CAP_MB = 25
#: The size of the first bucket to be reduced when the default cap is used.
DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024

UNFINISHED_REDUCTION_MESSAGE = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` "
    "function. Please include the loss function and the structure of the return value of "
    "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n"
)


def assign_buckets(params: list[Tensor], limits: list[int]) -> list[list[int]]:
    """Group parameters into buckets, in the order given, each bucket of one dtype and device.

    Parameters go one by one into the open bucket of their dtype and device;
    once a bucket holds at least its size limit in bytes it is closed (so a
    bucket may pass its limit by one parameter) and a new one opens. The first
    bucket of each dtype and device gets ``limits[0]``, its next ones the next
    limits, the last limit repeating.

    Args:
        params: the parameters, in the order their gradients are expected.
        limits: byte limits: ``[first bucket, every later bucket]``.

    Returns:
        buckets as lists of positions in ``params``, ordered by their first
        position (the order in which each bucket starts to fill), as PyTorch's
        ``_compute_bucket_assignment_by_size`` gives them.
    """
    buckets: list[list[int]] = []
    open_bucket: dict[tuple, list[int]] = {}  # (dtype, device) -> the positions in it
    filled: dict[tuple, int] = {}  # bytes in the open bucket
    closed_count: dict[tuple, int] = {}  # buckets closed so far
    for position, param in enumerate(params):
        key = (param.dtype, str(param.device))
        if key not in open_bucket:
            open_bucket[key], filled[key] = [], 0
            buckets.append(open_bucket[key])
        open_bucket[key].append(position)
        filled[key] += param.numel() * param.element_size()
        limit = limits[min(closed_count.get(key, 0), len(limits) - 1)]
        if filled[key] >= limit:
            del open_bucket[key]
            closed_count[key] = closed_count.get(key, 0) + 1
    return buckets  # in the order they were opened, which is the order of their first position


class Bucket:
    """Some parameters' gradients side by side in one flat buffer, reduced by one all-reduce.

    Attributes:
        params: the parameters, in the order their slots follow each other.
        buffer: the flat buffer (zeros at first) of all their elements.
        views: for each parameter, the slice of ``buffer`` shaped like it.
        pending: how many of the gradients have not arrived yet this iteration.
        work: the running all-reduce (``Work``), once launched.
    """

    def __init__(self, params: list[Tensor]):
        self.params = params
        total = sum(param.numel() for param in params)
        self.buffer = zeros(total, dtype=params[0].dtype, device=params[0].device)
        self.views = []
        offset = 0
        for param in params:
            self.views.append(self.buffer[offset : offset + param.numel()].view(param.shape))
            offset += param.numel()
        self.pending = len(params)
        self.work = None


def find_tensors(value) -> list[Tensor]:
    """Every tensor inside a forward's output (nested tuples, lists and dicts)."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in find_tensors(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in find_tensors(item)]
    return []


def reachable_leaves(outputs: list[Tensor]) -> set[int]:
    """The ``id`` of every leaf tensor whose gradient backward from ``outputs`` would compute.

    A walk over the autograd graph (``grad_fn`` and ``next_functions``) that
    collects the leaf behind each ``AccumulateGrad`` node it meets.
    """
    found: set[int] = set()
    stack = []
    for output in outputs:
        if output.grad_fn is not None:
            stack.append(output.grad_fn)
        elif output.requires_grad:  # the output is itself a leaf
            found.add(id(output))
    seen = set(stack)
    while stack:
        node = stack.pop()
        if isinstance(node, AccumulateGrad):
            found.add(id(node.variable))
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                stack.append(next_node)
    return found


class Reducer:
    """Averages the gradients of ``params`` over the processes of ``group`` during backward.

    Args:
        params: the parameters that require grad, in registration order.
        names: their names, for error messages.
        group: the process group (None: the default one).
        bucket_cap_bytes: the size limit of every bucket but the first.
        first_bucket_cap_bytes: the size limit of the first bucket reduced.
        find_unused_parameters: look for parameters the forward did not use.
        gradient_as_bucket_view: make each ``.grad`` a view of its bucket's
            buffer (no copy back after the all-reduce; the buffer is the gradient).
    """

    def __init__(
        self,
        params: list[Tensor],
        names: list[str],
        group,
        bucket_cap_bytes: int,
        first_bucket_cap_bytes: int,
        find_unused_parameters: bool,
        gradient_as_bucket_view: bool,
    ):
        from glasstorch import distributed

        self.dist = distributed
        self.group = group
        self.world_size = distributed.get_world_size(group)
        self.rank = distributed.get_rank(group)
        self.params = params
        self.names = names
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view

        # Buckets over the parameters in reverse order of registration: the
        # order in which backward is expected to produce their gradients.
        backward_order = list(reversed(range(len(params))))
        limits = [first_bucket_cap_bytes, bucket_cap_bytes]
        positions = assign_buckets([params[i] for i in backward_order], limits)
        self.buckets = [Bucket([params[backward_order[p]] for p in bucket]) for bucket in positions]
        #: For each parameter (by id): its bucket's index and its slot in that bucket.
        self.slot_of: dict[int, tuple[int, int]] = {}
        for bucket_index, bucket in enumerate(self.buckets):
            for slot, param in enumerate(bucket.params):
                self.slot_of[id(param)] = (bucket_index, slot)

        self.hooks = [
            param.register_post_accumulate_grad_hook(self._on_grad_ready) for param in params
        ]
        self.expect_hooks = False  # set by prepare_for_backward (not under no_sync)
        self.in_reduction = False  # a backward has marked gradients but not finished
        self.ready: set[int] = set()  # ids of the parameters marked ready this iteration
        self.unused: list[Tensor] = []  # parameters the forward did not reach
        self.next_bucket = 0  # the next bucket to launch (they launch in index order)
        #: Launch each bucket as soon as it is full (True), or all of them only once
        #: backward has produced every gradient (False: no overlap, to measure what
        #: overlapping buys; the benchmark and the course switch it off).
        self.overlap = True

    # ------------------------------------------------------------- forward
    def prepare_for_backward(self, outputs: list[Tensor]) -> None:
        """Get ready for the backward of a forward that gave ``outputs``.

        Raises the unused-parameter error if the previous backward left
        reductions unfinished.
        """
        self.check_previous_reduction_finished()
        self.expect_hooks = True
        self.ready = set()
        self.next_bucket = 0
        for bucket in self.buckets:
            bucket.pending = len(bucket.params)
            bucket.work = None
        if self.find_unused_parameters:
            used = reachable_leaves(outputs)
            self.unused = [param for param in self.params if id(param) not in used]

    def skip_backward(self) -> None:
        """The next backward accumulates locally, without communication (``no_sync``)."""
        self.check_previous_reduction_finished()
        self.expect_hooks = False

    def check_previous_reduction_finished(self) -> None:
        """Raise PyTorch's error if the last backward left some gradients unreduced."""
        if not self.in_reduction:
            return
        missing = [i for i, param in enumerate(self.params) if id(param) not in self.ready]
        indices = " ".join(str(i) for i in missing)
        names = ", ".join(self.names[i] for i in missing)
        self.in_reduction = False  # reported once; the next iteration starts afresh
        raise RuntimeError(
            UNFINISHED_REDUCTION_MESSAGE
            + f"Parameter indices which did not receive grad for rank {self.rank}: {indices}\n"
            + f"Parameters which did not receive grad for rank {self.rank}: {names}"
        )

    # ------------------------------------------------------------ backward
    def _on_grad_ready(self, param: Tensor) -> None:
        """The post-accumulate-grad hook of every parameter: its gradient is final."""
        if not self.expect_hooks:  # under no_sync, or outside a DDP iteration
            return
        if not self.in_reduction:  # the first gradient of this backward
            self.in_reduction = True
            for unused in self.unused:  # nothing will come for these: ready now
                self._mark_ready(unused)
        self._mark_ready(param)

    def _mark_ready(self, param: Tensor) -> None:
        """Put ``param``'s gradient, divided by the world size, into its bucket slot.

        Then launch every bucket that is full and whose predecessors are launched.
        """
        if id(param) in self.ready:
            index = next(i for i, known in enumerate(self.params) if known is param)
            raise RuntimeError(
                "Expected to mark a variable ready only once. "
                f"Parameter at index {index} with name {self.names[index]} has been marked as "
                "ready twice: its gradient arrived twice in one iteration (a second backward "
                "through the same forward, or a parameter shared by two DDP modules)."
            )
        self.ready.add(id(param))
        bucket_index, slot = self.slot_of[id(param)]
        bucket = self.buckets[bucket_index]
        view = bucket.views[slot]
        if param.grad is view:  # gradient_as_bucket_view: the gradient is already there
            view.mul_(1.0 / self.world_size)
        elif param.grad is None:  # an unused parameter contributes zeros
            view.zero_()
        else:
            view.copy_(param.grad * (1.0 / self.world_size))
        bucket.pending -= 1
        if not self.overlap and len(self.ready) < len(self.params):
            return  # (the comparison: every bucket waits for the last gradient)
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            self._launch(self.buckets[self.next_bucket])
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):  # the last bucket just left (this happens once)
            Variable._execution_engine.queue_callback(self._finalize)  # wait when backward ends

    def _launch(self, bucket: Bucket) -> None:
        """Start the bucket's all-reduce; it runs while backward goes on."""
        bucket.work = self.dist.all_reduce(bucket.buffer, group=self.group, async_op=True)

    def _finalize(self) -> None:
        """At the end of backward: wait for every bucket, then hand the averages to ``.grad``."""
        for bucket in self.buckets:
            bucket.work.wait()
        globally_used = self._globally_used() if self.find_unused_parameters else None
        for bucket in self.buckets:
            for param, view in zip(bucket.params, bucket.views):
                if globally_used is not None and id(param) not in globally_used:
                    continue  # no process used it: its .grad stays as it was
                if self.gradient_as_bucket_view:
                    param.grad = view
                elif param.grad is None:
                    param.grad = view.clone()
                else:
                    param.grad.copy_(view)
        self.in_reduction = False
        self.expect_hooks = False

    def _globally_used(self) -> set[int]:
        """The ids of the parameters that at least one process used (one more all-reduce)."""
        unused = {id(param) for param in self.unused}
        counts = zeros(len(self.params))
        for i, param in enumerate(self.params):
            if id(param) not in unused:
                counts[i] = 1.0
        self.dist.all_reduce(counts, group=self.group)
        return {id(param) for param, count in zip(self.params, counts.tolist()) if count > 0}

    def remove_hooks(self) -> None:
        """Detach the reducer from the parameters."""
        for handle in self.hooks:
            handle.remove()
