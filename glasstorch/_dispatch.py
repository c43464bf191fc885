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

**Where outputs are placed** is decided in the frontend, not here: every
operation computes its output's device from its operands
(:func:`glasstorch.ops.core.common_device`, as PyTorch's TensorIterator does)
and allocates it there (``empty_tensor(..., device=...)``). A storage records
its device when it is made; the dispatcher only reads where buffers live and
never changes a frontend object.
"""

from __future__ import annotations

import numpy as np

from glasstorch._gpu.buffers import DeviceBuffer
from glasstorch._kernels import Kernels, Strided, contract_kernel_names

MIXED_DEVICES = (
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)


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
        """A new buffer on ``device`` (a :class:`glasstorch.device`; None: the CPU)."""
        if device is not None and device.type == "cuda":
            return self.cuda.allocate(numel, dtype)
        return self.cpu.allocate(numel, dtype)

    def set_num_threads(self, n: int) -> None:
        self.cpu.set_num_threads(n)

    def get_num_threads(self) -> int:
        return self.cpu.get_num_threads()

    # ------------------------------------------------------------- routing
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
        cpu_positions = []
        for position, arg in enumerate(args):
            if type(arg) is not Strided:
                continue
            if type(arg.buffer) is DeviceBuffer:
                on_cuda = True
            else:
                cpu_positions.append(position)
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
