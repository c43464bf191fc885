"""The dispatcher: one kernel object that sends each call to the CPU tier or to the GPU.

When CUDA is off (``GLASSTORCH_CUDA=off``, or ``auto`` without a GPU) this
module is never used: ``glasstorch._tier.kernels`` is the CPU tier itself, and
the CPU path pays nothing. When a CUDA driver is active, ``kernels`` is a
:class:`Dispatcher`. Every contract call goes through it, and it looks at
where the buffers of the call's :class:`~glasstorch._kernels.Strided`
arguments live:

* all on the CPU: the CPU tier runs the kernel;
* any on the GPU: the CUDA kernels run it. A CPU operand that holds one value
  read everywhere (a 0-d tensor, broadcast) is copied to the device first, as
  PyTorch lets a CPU scalar tensor join a CUDA computation; any other CPU
  operand is an error with PyTorch's wording ("Expected all tensors to be on
  the same device, but found at least two devices, cuda:0 and cpu!").
  ``copy`` is the one kernel that may mix devices: it is how data moves
  between host and device. A kernel cannot tell a broadcast 0-d tensor from a
  broadcast one-element tensor, which PyTorch refuses; the frontend holds the
  exact rule (``common_device`` and ``check_same_device`` in
  :mod:`glasstorch.ops.core`) and calls it before the kernels run.

**Where outputs are placed.** Frontend operations allocate their outputs with
``empty_tensor(shape, dtype)`` before calling a kernel, without naming a
device. While CUDA is active such a storage starts *unplaced*: its buffer is
a :class:`PendingBuffer` (a size and a dtype, no memory). The first kernel
that receives it places it on the device of that call's other operands (the
CPU when there are none), so ``a + b`` lands where ``a`` and ``b`` live
without every operation of the frontend having to pass a device along. This
is glasstorch's stand-in for PyTorch's TensorIterator computing the output's
device from its inputs. Creation functions with ``device=`` allocate directly.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

import numpy as np

from glasstorch._gpu.buffers import DeviceBuffer
from glasstorch._kernels import Kernels, Strided, contract_kernel_names

MIXED_DEVICES = (
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)


_creation = threading.local()  # .device: where the creation function being run allocates


def creation_device():
    """The device of the creation function running on this thread (None outside one)."""
    return getattr(_creation, "device", None)


@contextlib.contextmanager
def allocating_on(target):
    """Allocate new tensors of the ``with`` block on ``target`` (a creation function's device)."""
    previous = getattr(_creation, "device", None)
    _creation.device = target
    try:
        yield
    finally:
        _creation.device = previous


class PendingBuffer:
    """The buffer of a storage whose device is decided by the first kernel that writes it.

    Attributes:
        size: number of elements (``len(buffer)``).
        dtype: the NumPy dtype.
        resolved: the real buffer once placed (a NumPy array or a DeviceBuffer).
    """

    __slots__ = ("size", "dtype", "resolved", "_storage")

    def __init__(self, size: int, dtype) -> None:
        self.size = size
        self.dtype = np.dtype(dtype)
        self.resolved = None
        self._storage = None

    def attach(self, storage) -> None:
        """Remember the storage whose buffer this is (weakly), to update it when placed."""
        self._storage = weakref.ref(storage)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"PendingBuffer(dtype={self.dtype}, size={self.size})"


def _single_value(view: Strided) -> bool:
    """Whether every element of the view reads the same storage element (a broadcast scalar)."""
    return all(stride == 0 or size == 1 for size, stride in zip(view.shape, view.strides))


class Dispatcher(Kernels):
    """Routes each contract kernel to ``cpu`` or ``cuda`` by the device of its buffers.

    Args:
        cpu: the CPU tier's kernels (reference or fast).
        cuda: the CUDA kernels (``glasstorch.fast.cuda.kernels``).
    """

    def __init__(self, cpu: Kernels, cuda: Kernels) -> None:
        self.cpu = cpu
        self.cuda = cuda
        self.name = cpu.name

    # ------------------------------------------------------------- storage
    def allocate(self, numel: int, dtype, device=None):
        """A new buffer on ``device`` ("cpu", "cuda", a device), or an unplaced one for None."""
        if device is None:
            return PendingBuffer(numel, dtype)
        if getattr(device, "type", device) == "cuda" or str(device).startswith("cuda"):
            return self.cuda.allocate(numel, dtype)
        return self.cpu.allocate(numel, dtype)

    def set_num_threads(self, n: int) -> None:
        self.cpu.set_num_threads(n)

    def get_num_threads(self) -> int:
        return self.cpu.get_num_threads()

    # ------------------------------------------------------------- routing
    def _place(self, views: list[Strided], on_cuda: bool) -> None:
        """Give every still-unplaced buffer among ``views`` real memory on the call's device."""
        tier = self.cuda if on_cuda else self.cpu
        for view in views:
            pending = view.buffer
            if pending.resolved is None:
                try:
                    pending.resolved = tier.allocate(pending.size, pending.dtype)
                except MemoryError:  # the host refused: PyTorch's wording, as empty_tensor's
                    from glasstorch.tensor import host_out_of_memory

                    raise host_out_of_memory(pending.size * pending.dtype.itemsize) from None
                storage = pending._storage() if pending._storage is not None else None
                if storage is not None and storage.buffer is pending:
                    storage.buffer = pending.resolved
            view.buffer = pending.resolved

    def _to_device(self, name: str, view: Strided) -> Strided:
        """A CPU operand of a CUDA call: a broadcast scalar moves to the device, else an error."""
        if name == "copy":
            return view
        if not _single_value(view):
            raise RuntimeError(MIXED_DEVICES)
        value = np.array([view.buffer[view.offset]], dtype=view.buffer.dtype)
        buffer = self.cuda.allocate(1, value.dtype)
        self.cuda.copy_to_device(buffer.ptr, value)
        return Strided(buffer, view.shape, view.strides, 0)

    def dispatch(self, name: str, args: tuple, kwargs: dict):
        """Run contract kernel ``name`` on the device its arguments live on."""
        on_cuda = False
        pending = []
        cpu_positions = []
        for position, arg in enumerate(args):
            if type(arg) is not Strided:
                continue
            buffer = arg.buffer
            kind = type(buffer)
            if kind is PendingBuffer:
                if buffer.resolved is None:
                    pending.append(arg)
                    continue
                arg.buffer = buffer = buffer.resolved
                kind = type(buffer)
            if kind is DeviceBuffer:
                on_cuda = True
            else:
                cpu_positions.append(position)
        if pending:
            self._place(pending, on_cuda)
        if not on_cuda:
            return getattr(self.cpu, name)(*args, **kwargs)
        if cpu_positions and name != "copy":
            if cpu_positions[0] == 0:  # the output (always first) cannot live elsewhere
                raise RuntimeError(MIXED_DEVICES)
            args = list(args)
            for position in cpu_positions:
                args[position] = self._to_device(name, args[position])
        return getattr(self.cuda, name)(*args, **kwargs)


def _router(name: str):
    def kernel(self, *args, **kwargs):
        return self.dispatch(name, args, kwargs)

    kernel.__name__ = name
    kernel.__doc__ = f"``{name}`` on the device of its arguments (see :class:`Dispatcher`)."
    kernel.__wrapped__ = getattr(Kernels, name)  # inspect.signature shows the contract's
    return kernel


for _name in contract_kernel_names():
    if _name not in ("allocate", "set_num_threads", "get_num_threads"):
        setattr(Dispatcher, _name, _router(_name))
del _name


def make_dispatcher(cpu: Kernels, cuda: Kernels) -> Dispatcher:
    """The dispatcher over the CPU tier ``cpu`` and the CUDA kernels ``cuda``."""
    return Dispatcher(cpu, cuda)
