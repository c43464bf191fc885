"""``DistributedDataParallel``: the module wrapper that trains one model in many processes.

Every process (launched by ``python -m glasstorch.distributed.run``, each with
its ``RANK``) builds the same model and wraps it::

    dist.init_process_group()
    model = DistributedDataParallel(Net())
    for inputs, targets in loader:  # each rank reads its own share (DistributedSampler)
        optimizer.zero_grad()
        loss_fn(model(inputs), targets).backward()  # gradients averaged over the ranks
        optimizer.step()  # the same step on every rank: the copies stay equal

Three moments make it work (Li et al., VLDB 2020):

* **Construction**: rank 0's parameters and buffers are broadcast to every
  rank, so all copies start equal; the gradients are divided into buckets
  (:mod:`glasstorch.nn.parallel.reducer` explains why and how).
* **Forward**: the wrapped module runs unchanged; DDP notes that a backward
  will follow (and, with ``find_unused_parameters``, which parameters the
  output does not depend on).
* **Backward**: hooks send each bucket as soon as its gradients are ready, so
  the all-reduce overlaps the rest of backward; when backward ends every
  ``.grad`` holds the average over the ranks, which equals the gradient of the
  whole batch's mean loss computed in one process.

Where glasstorch differs from PyTorch: buckets follow the reverse registration
order from the first iteration (PyTorch 2.x starts with one bucket, then
rebuilds its buckets from the order it observed in the first backward); the
unused-parameter error always names the parameters (PyTorch does so only with
``TORCH_DISTRIBUTED_DEBUG=INFO`` or ``DETAIL``); there is no ``register_comm_hook``,
``static_graph`` or ``join``.
"""

from __future__ import annotations

import contextlib

from glasstorch.autograd.grad_mode import is_grad_enabled, no_grad
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parallel.reducer import (
    DEFAULT_BUCKET_CAP_MB,
    DEFAULT_FIRST_BUCKET_BYTES,
    Reducer,
    find_tensors,
)

__all__ = ["DistributedDataParallel"]

_MIB = 1024 * 1024


class DistributedDataParallel(Module):
    """Data parallelism: run ``module`` in every process and average its gradients in backward.

    Args:
        module: the model, built the same way on every rank.
        device_ids: PyTorch's argument for a single-GPU module (``[local_rank]``);
            accepted, at most one element.
        output_device: accepted for PyTorch's signature; unused.
        dim: accepted for PyTorch's signature; unused.
        broadcast_buffers: before each forward, copy rank 0's buffers (batch
            norm's running statistics) to every rank.
        init_sync: broadcast rank 0's parameters and buffers at construction.
        process_group: the group to average over (the default group if None).
        bucket_cap_mb: the bucket size in MiB (default 25; when left at the
            default the first bucket reduced is limited to 1 MiB).
        find_unused_parameters: walk the graph from the forward's outputs to find
            parameters that will get no gradient, so their buckets need not wait.
        check_reduction: deprecated in PyTorch; ignored.
        gradient_as_bucket_view: make each ``.grad`` a view into its bucket (saves
            the memory and the copy of a second gradient).
        static_graph: accepted for PyTorch's signature; glasstorch treats every
            graph alike.

    Attributes:
        module: the wrapped module (``state_dict`` keys start with ``"module."``).
        require_backward_grad_sync: False inside :meth:`no_sync`.

    Raises:
        RuntimeError: no default process group, or no parameter requires grad.
        ValueError: more than one device id.
    """

    def __init__(
        self,
        module: Module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        init_sync: bool = True,
        process_group=None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
    ):
        super().__init__()
        from glasstorch import distributed

        named = list(module.named_parameters())
        if not any(param.requires_grad for _, param in named):
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module "
                "doesn't have any parameter that requires a gradient."
            )
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._dist = distributed
        self._world_size = distributed.get_world_size(process_group)

        cap_mb = DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * _MIB)
        first_cap = DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap

        if init_sync:
            self._sync_module_states()
        trained = [(name, param) for name, param in named if param.requires_grad]
        self.reducer = Reducer(
            [param for _, param in trained],
            [name for name, _ in trained],
            process_group,
            self.bucket_bytes_cap,
            first_cap,
            find_unused_parameters,
            gradient_as_bucket_view,
        )

    @no_grad()
    def _sync_module_states(self) -> None:
        """Copy the group's rank 0's parameters and buffers into every rank (a broadcast each).

        Every rank must start from the same weights: the averaged gradients
        keep equal copies equal, but cannot make unequal copies meet.
        """
        for tensor in [*self.module.parameters(), *self.module.buffers()]:
            self._dist.broadcast(tensor, group=self.process_group, group_src=0)

    @no_grad()
    def _sync_buffers(self) -> None:
        """Before a forward: rank 0's buffers (e.g. batch norm's running statistics) everywhere."""
        for buffer in self.module.buffers():
            self._dist.broadcast(buffer, group=self.process_group, group_src=0)

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module, and prepare the reducer for the backward that follows."""
        if self.broadcast_buffers and self._world_size > 1:
            self._sync_buffers()
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self.reducer.prepare_for_backward(find_tensors(output))
        else:
            self.reducer.skip_backward()
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Inside this block backward only accumulates gradients locally: no communication.

        Gradient accumulation over ``k`` micro-batches needs one all-reduce, not
        ``k``: run the first ``k - 1`` forward/backward passes inside
        ``no_sync()`` and the last one outside; the last backward reduces the
        accumulated sum. The forward must run inside the block too.

        Example::

            with ddp.no_sync():
                for micro_batch in first_ones:
                    loss_fn(ddp(micro_batch), ...).backward()
            loss_fn(ddp(last), ...).backward()  # averages the accumulated gradients
        """
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
