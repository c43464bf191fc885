"""The Tensor: a view (shape, strides, offset, dtype) over a flat storage buffer.

A Tensor owns no loops. It holds metadata and a reference to a :class:`Storage`;
every computation goes through the active tier's kernels (see
:mod:`glasstorch._kernels`), and every differentiable operation is an
:class:`~glasstorch.autograd.Function` from :mod:`glasstorch.ops`. The methods
below are thin: each names the operation it calls.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from glasstorch import _dtype, _tier
from glasstorch._kernels import Strided
from glasstorch._shape import (
    MAX_DIMS,
    check_storage_bytes,
    is_contiguous,
    normalize_dim,
    numel,
    row_major_strides,
)
from glasstorch._tier import cuda_active
from glasstorch.autograd import function as _function_module
from glasstorch.autograd.function import AccumulateGrad, HookDict
from glasstorch.autograd.grad_mode import is_grad_enabled

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class Storage:
    """A flat buffer of elements, the device it lives on, and the version counter of its views.

    Attributes:
        buffer: the flat elements: a NumPy array on the CPU, a device buffer
            (:class:`glasstorch._gpu.buffers.DeviceBuffer`) on the GPU.
        device: where ``buffer`` lives (``cpu`` or ``cuda:0``), recorded when
            the storage is made; every operation computes its output's device
            from its operands' (see :func:`glasstorch.ops.core.common_device`).
        version: how many in-place writes the storage has seen; autograd
            compares it with the value noted when a tensor was saved.
        exported: whether NumPy arrays outside glasstorch may share the
            buffer (``from_numpy``, ``.numpy()``). Such memory is never taken
            as a leaf's ``.grad`` without a copy (see ``AccumulateGrad``).
    """

    __slots__ = ("buffer", "device", "version", "exported", "pinned", "__weakref__")

    def __init__(self, buffer, exported: bool = False, device=None):
        self.buffer = buffer
        # One of the two device constants, so that "is it on the GPU?" is an identity test.
        self.device = CPU if device is None or device.type == "cpu" else CUDA0
        self.version = 0
        self.exported = exported
        self.pinned = False  # page-locked host memory (``pin_memory()``)

    def __len__(self) -> int:
        return len(self.buffer)

    def data_ptr(self) -> int:
        """Address of the first element in memory (a device address on the GPU)."""
        if self.device.type == "cuda":
            return self.buffer.ptr
        return self.buffer.__array_interface__["data"][0]


class device:  # noqa: N801 - PyTorch's name
    """Where a tensor's storage lives: ``"cpu"``, or ``"cuda"`` / ``"cuda:0"`` for the GPU.

    A bare int means that CUDA device (``device(0)`` is ``cuda:0``), as in PyTorch.
    """

    def __init__(self, spec="cpu", index: int | None = None):
        if isinstance(spec, device):
            spec, index = spec.type, spec.index
        elif isinstance(spec, int) and not isinstance(spec, bool):
            spec, index = "cuda", spec
        kind, _, number = str(spec).partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {spec}"
            )
        if number and not number.isdigit():
            raise RuntimeError(f"Invalid device string: '{spec}'")
        self.type = kind
        self.index = int(number) if number else index

    def __eq__(self, other) -> bool:
        other = device(other) if isinstance(other, str) else other
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


CPU = device("cpu")
CUDA0 = device("cuda", 0)


class layout:  # noqa: N801 - PyTorch's name
    """How a tensor stores its elements: ``torch.strided`` (dense) or ``torch.sparse_coo``."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def parse_to(args: tuple, kwargs: dict):
    """``(dtype, device, non_blocking)`` asked for by ``to(...)`` (None where not given).

    A tensor argument means its dtype and its device, as in PyTorch.
    """
    dtype = kwargs.pop("dtype", None)
    target = kwargs.pop("device", None)
    non_blocking = bool(kwargs.pop("non_blocking", False))
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, _dtype.dtype):
            dtype = arg
        elif isinstance(arg, Tensor):
            dtype, target = arg.dtype, arg.device
        elif isinstance(arg, bool):  # a positional non_blocking flag
            non_blocking = arg
        else:
            target = arg
    return dtype, check_device(target), non_blocking


def check_device(spec) -> device | None:
    """The device ``spec`` names (None for None), if it is usable here.

    Raises:
        AssertionError: PyTorch's "Torch not compiled with CUDA enabled" for a
            CUDA device while CUDA is off (``GLASSTORCH_CUDA``), with what to do.
        RuntimeError: a CUDA device index other than 0.
    """
    if spec is None:
        return None
    target = device(spec)
    if target.type == "cpu":
        return target
    if not cuda_active:
        raise AssertionError(
            "Torch not compiled with CUDA enabled (glasstorch has no CUDA device here: "
            "GLASSTORCH_CUDA=cupy needs CuPy and an NVIDIA GPU, GLASSTORCH_CUDA=simulator runs "
            "the CUDA kernels on the CPU; set it before importing glasstorch)"
        )
    if target.index not in (None, 0):
        raise RuntimeError(
            f"CUDA error: invalid device ordinal (device {target}; glasstorch drives one CUDA "
            "device, cuda:0)"
        )
    return CUDA0


class Tensor:
    """A multi-dimensional array of one dtype, with autograd.

    A tensor is a *view*: ``shape``, ``stride()`` and ``storage_offset()`` say
    where each element sits in a flat storage buffer that several tensors may
    share. Views (``view``, ``transpose``, ``expand``, slicing) make new
    metadata over the same storage and copy nothing.

    Create tensors with :func:`glasstorch.tensor`, :func:`glasstorch.zeros` and
    friends rather than calling this class.
    """

    __array_priority__ = 1000  # numpy scalars defer to our operators

    def __new__(cls, *args, **kwargs):
        """The legacy constructor ``Tensor(data)`` / ``Tensor(*sizes)``, in the default dtype.

        See :mod:`glasstorch.ops.legacy`; new code calls :func:`glasstorch.tensor`.
        """
        from glasstorch.ops.legacy import legacy_tensor

        return legacy_tensor(_dtype.get_default_dtype(), args, kwargs)

    def __init__(self, *args, **kwargs):
        pass  # __new__ built the tensor (Tensor._make never calls __init__)

    # What a new tensor starts with, besides its metadata: no gradient, no
    # history, no hooks. These are class-level defaults that an instance
    # overrides when it changes them, so ``_make`` (run for every tensor, on
    # the path of every operation) sets only the five fields that differ.
    _requires_grad = False
    _grad = None  # the accumulated gradient of a leaf, after backward (see ``grad``)
    grad_fn = None  # the graph node that made this tensor (None for a leaf)
    _output_nr = 0  # which output of grad_fn this tensor is
    _base = None  # the tensor whose storage this view shares (None if not a view)
    _backward_hooks = None  # a HookDict once a hook is registered on this leaf
    _post_accumulate_grad_hooks = None  # a HookDict of hooks run after .grad is accumulated
    _accumulator_ref = None  # weak reference to this leaf's AccumulateGrad node
    _kernel_view = None  # the Strided handed to kernels, made on first use
    _flat_kernel_view = None  # a contiguous tensor's 1-D Strided (optimizers), on first use
    layout = strided  # a dense tensor; glasstorch.ops.sparse.SparseCooTensor says sparse_coo
    is_sparse = False  # whether the layout is sparse_coo

    # ------------------------------------------------------------ construction
    @classmethod
    def _make(cls, storage: Storage, shape, stride, offset: int, dtype) -> Tensor:
        """A tensor over ``storage``: the one place every Tensor object is built."""
        self = object.__new__(cls)
        self._storage = storage
        self._shape = shape if type(shape) is tuple else tuple(shape)
        self._stride = stride if type(stride) is tuple else tuple(stride)
        self._offset = offset
        self.dtype = dtype
        return self

    def _view(self, shape, stride, offset: int | None = None) -> Tensor:
        """A new tensor over the same storage with other metadata (no autograd)."""
        out = Tensor._make(
            self._storage, shape, stride, self._offset if offset is None else offset, self.dtype
        )
        out._base = self._base if self._base is not None else self
        return out

    def _alias(self) -> Tensor:
        """The same elements as a new tensor object (used when a Function returns an input)."""
        return self._view(self._shape, self._stride)

    def _strided(self) -> Strided:
        """The description kernels receive: buffer, shape, strides, offset.

        A tensor's metadata never changes after it is made (``data = ...``
        aside, which forgets it), so the same object serves every kernel
        call, and a tier can keep its own form of it in ``Strided.native``.
        Only the storage's buffer can change under it, when the storage moves
        to shared memory (``share_memory_``): then the view is made anew.
        """
        view = self._kernel_view
        buffer = self._storage.buffer
        if view is None or view.buffer is not buffer:
            view = Strided(buffer, self._shape, self._stride, self._offset)
            self._kernel_view = view
        return view

    # ---------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        """The size of each dimension, as a :class:`Size` (a tuple)."""
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dimension."""
        if dim is None:
            return Size(self._shape)
        return self._shape[normalize_dim(dim, self.dim())]

    def stride(self, dim: int | None = None):
        """Elements to skip in storage to move one step along each dimension."""
        if dim is None:
            return self._stride
        return self._stride[normalize_dim(dim, self.dim())]

    def storage_offset(self) -> int:
        """Position of the first element in the storage, in elements."""
        return self._offset

    def dim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    ndim = property(dim, doc="Number of dimensions.")

    def ndimension(self) -> int:
        """Number of dimensions (an alias of :meth:`dim`)."""
        return self.dim()

    def numel(self) -> int:
        """Number of elements."""
        return numel(self._shape)

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def device(self) -> device:
        """Where the storage lives: ``cpu`` or ``cuda:0``."""
        return self._storage.device

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a GPU."""
        return self._storage.device is CUDA0

    def get_device(self) -> int:
        """The CUDA device index, or -1 for a CPU tensor."""
        return 0 if self.is_cuda else -1

    def data_ptr(self) -> int:
        """Address of the first element: the storage's address plus the offset in bytes."""
        return self._storage.data_ptr() + self._offset * self.dtype.itemsize

    def untyped_storage(self) -> Storage:
        """The storage this tensor views."""
        return self._storage

    def is_contiguous(self) -> bool:
        """Whether elements are laid out in row-major order with no gaps.

        Dimensions of size 1 may have any stride, and a tensor without
        elements is contiguous, as in PyTorch.
        """
        return is_contiguous(self._shape, self._stride)

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point type."""
        return self.dtype.is_floating_point

    @property
    def _version(self) -> int:
        """How many in-place changes the storage has seen (shared by all views)."""
        return self._storage.version

    def _bump_version(self) -> None:
        self._storage.version += 1

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded operation (user-created, or no grad)."""
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        """Whether gradients are computed for this tensor."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not self.is_leaf:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and not self.dtype.is_floating_point:
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return the tensor."""
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated into this tensor by ``backward`` (None until then)."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        # PyTorch's checks on an assigned gradient: it is a tensor (or None), on
        # this tensor's device and of its size, so that the next ``backward``
        # can add into it and an optimizer can step with it.
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    "assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}"
                )
            if value.device.type != self.device.type:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{value.device.type}' "
                    f"to a tensor with device type '{self.device.type}'. Please ensure that "
                    "the gradient and the tensor are on the same device"
                )
            if value._shape != self._shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._shape)}' to a "
                    f"tensor of size '{list(self._shape)}'. Please ensure that the gradient "
                    "and the tensor are the same size"
                )
        self._grad = value

    @property
    def data(self) -> Tensor:
        """The tensor's values, detached from autograd (shares storage)."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        self._storage, self._shape, self._stride = value._storage, value._shape, value._stride
        self._offset, self.dtype = value._offset, value.dtype
        self._kernel_view = self._flat_kernel_view = None  # they describe the old storage

    # ---------------------------------------------------------------- autograd
    def _grad_accumulator(self) -> AccumulateGrad:
        """The AccumulateGrad node of a leaf (kept while a graph refers to it)."""
        node = self._accumulator_ref() if self._accumulator_ref is not None else None
        if node is None:
            node = AccumulateGrad(self)
            self._accumulator_ref = weakref.ref(node)
        return node

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Compute gradients of this tensor with respect to graph leaves.

        Args:
            gradient: gradient of some scalar with respect to this tensor;
                optional for a tensor with one element (then 1).
            retain_graph: keep the saved tensors for another backward
                (defaults to ``create_graph``).
            create_graph: record the backward pass itself, for higher derivatives.
            inputs: accumulate only into these tensors' ``.grad``.
        """
        from glasstorch.autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook) -> object:
        """Call ``hook(grad)`` when this tensor's gradient is computed.

        The hook may return a new gradient to use instead. Returns a handle
        whose ``remove()`` takes the hook away.
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._backward_hooks is None:
                self._backward_hooks = HookDict()
            return self._backward_hooks.add(hook)
        hooks = self.grad_fn._tensor_pre_hooks.setdefault(self._output_nr, HookDict())
        return hooks.add(hook)

    def register_post_accumulate_grad_hook(self, hook) -> object:
        """Call ``hook(tensor)`` on this leaf after backward has accumulated into its ``.grad``.

        Unlike :meth:`register_hook`, the hook sees the leaf itself, once its
        ``.grad`` holds the sum of everything this backward sent it, and it
        changes no gradient (it must return None). Hooks run in the order they
        were registered, once per backward that reaches the leaf (not for
        ``autograd.grad``, which accumulates nothing). DistributedDataParallel
        uses it to learn that a parameter's gradient is ready to be sent.

        Returns a handle whose ``remove()`` takes the hook away.

        Raises:
            RuntimeError: the tensor does not require grad, or is not a leaf.
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = HookDict()
        return self._post_accumulate_grad_hooks.add(hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None:
            self.grad_fn._retain_grad_hooks[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        """Whether :meth:`retain_grad` was called on this non-leaf tensor."""
        return self.grad_fn is not None and self._output_nr in self.grad_fn._retain_grad_hooks

    def detach(self) -> Tensor:
        """A tensor over the same storage that is cut off from the graph."""
        out = Tensor._make(self._storage, self._shape, self._stride, self._offset, self.dtype)
        return out

    def detach_(self) -> Tensor:
        """Cut this tensor off from the graph, in place."""
        self.grad_fn, self._requires_grad = None, False
        return self

    # ---------------------------------------------------------- conversion out
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A NumPy array that shares this tensor's memory (same strides, no copy).

        As in PyTorch, a tensor that requires grad is refused only while grad mode
        is on (under ``no_grad``, e.g. in a ``@once_differentiable`` backward, nothing
        could record the array's use anyway).
        """
        if self.requires_grad and not force and is_grad_enabled():
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self.is_cuda:
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                "to copy the tensor to host memory first."
            )
        buffer = self._storage.buffer
        self._storage.exported = True  # the array shares the memory from now on
        item = buffer.itemsize
        return np.lib.stride_tricks.as_strided(
            buffer[self._offset :] if self.numel() else buffer[:0],
            shape=self._shape,
            strides=tuple(s * item for s in self._stride),
        )

    def __array__(self, dtype=None, copy=None):
        array = self.detach().numpy()
        if dtype is not None:
            return array.astype(dtype, copy=bool(copy))
        return array.copy() if copy else array

    def item(self):
        """The value of a one-element tensor as a Python number."""
        self._check_one_element(RuntimeError)
        if self._storage.device is CUDA0:  # a device-to-host copy, which waits for the device
            return self.cpu().item()
        # The buffer is a flat NumPy array: its item(i) is element i as the Python
        # number of the element's kind (float, int or bool).
        return self._storage.buffer.item(self._offset)

    def tolist(self):
        """The values as (nested) Python lists of numbers (copied to the host first)."""
        source = self.cpu()
        array = source.detach().numpy()
        return array.tolist()

    def __repr__(self) -> str:
        from glasstorch._printing import tensor_repr

        return tensor_repr(self)

    def __format__(self, format_spec: str) -> str:
        """``f"{loss:.4f}"``: a 0-d tensor formats as its Python number.

        As in PyTorch, a 0-d tensor formats as ``item()`` does (even with an
        empty spec, so ``f"{loss}"`` reads ``0.25``, not ``tensor(0.2500)``);
        any other tensor accepts only the empty spec, which gives its repr.
        """
        if self.dim() == 0:
            return format(self.item(), format_spec)
        return object.__format__(self, format_spec)

    def __len__(self) -> int:
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
                if self.numel() > 1
                else "Boolean value of Tensor with no values is ambiguous"
            )
        return bool(self.item())

    def _check_one_element(self, error: type) -> None:
        if self.numel() == 1:
            return
        if error is RuntimeError:
            raise RuntimeError(
                f"a Tensor with {self.numel()} elements cannot be converted to Scalar"
            )
        raise error("only one element tensors can be converted to Python scalars")

    def __float__(self) -> float:
        self._check_one_element(ValueError)
        return float(self.item())

    def __int__(self) -> int:
        self._check_one_element(ValueError)
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __reduce_ex__(self, protocol):
        from glasstorch.ops.creation import _rebuild_tensor

        host = self.detach().cpu().contiguous().numpy().copy()
        if self.is_cuda:
            return (_rebuild_tensor, (host, self.requires_grad, str(self.device)))
        return (_rebuild_tensor, (host, self.requires_grad))

    def __deepcopy__(self, memo):
        out = self.detach().clone()
        out._requires_grad = self.requires_grad
        if self.grad is not None:
            out.grad = self.grad.detach().clone()
        memo[id(self)] = out
        return out

    # ----------------------------------------------------------- dtype casts
    def to(self, *args, **kwargs) -> Tensor:
        """Convert dtype (``x.to(torch.float64)``) and/or device (``x.to("cuda")``).

        Returns ``self`` when nothing changes, as PyTorch does. A device move
        is a copy, recorded by autograd (the gradient moves back).
        ``non_blocking=True`` makes a host-to-device copy return at once (the
        simulator and CUDA stage the source, so it is safe to reuse at once);
        a device-to-host copy always waits, so the values can be read.
        """
        from glasstorch.ops.pointwise.conversion import to_dtype

        copy = kwargs.pop("copy", False)
        dtype, target, non_blocking = parse_to(args, kwargs)
        out = self
        if target is not None and target != self.device:
            from glasstorch.ops.device import to_device

            out = to_device(out, target, non_blocking)
            copy = False
        if dtype is None or dtype is out.dtype:
            return out.clone() if copy else out
        return to_dtype(out, dtype)

    def type(self, dtype=None):
        """The legacy type name (``"torch.FloatTensor"``), or a cast to ``dtype``."""
        if dtype is None:
            where = "cuda." if self.is_cuda else ""
            return f"torch.{where}{self.dtype.legacy_name}"
        return self.to(dtype)

    def float(self) -> Tensor:
        """Cast to float32."""
        return self.to(_dtype.float32)

    def double(self) -> Tensor:
        """Cast to float64."""
        return self.to(_dtype.float64)

    def long(self) -> Tensor:
        """Cast to int64."""
        return self.to(_dtype.int64)

    def int(self) -> Tensor:
        """Cast to int32."""
        return self.to(_dtype.int32)

    def bool(self) -> Tensor:
        """Cast to bool."""
        return self.to(_dtype.bool_)

    def byte(self) -> Tensor:
        """Cast to uint8."""
        return self.to(_dtype.uint8)

    def cpu(self) -> Tensor:
        """The tensor on the CPU: itself if it is there, else a copy (which waits for the GPU)."""
        if self.is_cuda:
            return self.to(CPU)
        return self

    def cuda(self, device=None, non_blocking: bool = False) -> Tensor:
        """The tensor on the GPU (``cuda:0``): itself if it is there, else a copy.

        Raises:
            AssertionError: CUDA is off (see ``GLASSTORCH_CUDA``).
        """
        target = check_device("cuda" if device is None else device)
        return self.to(target, non_blocking=non_blocking)

    def pin_memory(self) -> Tensor:
        """A copy of this CPU tensor in page-locked host memory (``is_pinned()`` is True).

        Copies from pinned memory to the GPU can overlap with computation
        (``non_blocking=True``). The simulator has no page-locked memory: the
        copy is flagged, and copies from it behave as from any host memory.
        """
        if not cuda_active:
            raise RuntimeError(
                "Cannot access accelerator device when none is available. (glasstorch has "
                "no CUDA device here: see GLASSTORCH_CUDA)"
            )
        if self.is_cuda:
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        if self._storage.pinned:
            return self
        out = self.detach().clone()
        out._storage.pinned = True
        out._requires_grad = self._requires_grad
        return out

    def is_pinned(self) -> bool:
        """Whether the tensor lives in page-locked host memory (see :meth:`pin_memory`)."""
        return self._storage.pinned

    def record_stream(self, stream) -> None:
        """Tell the caching allocator that ``stream`` uses this tensor's memory too.

        When the tensor is freed, its block is not reused until the work queued
        on ``stream`` by then has finished.
        """
        if not self.is_cuda:
            raise RuntimeError("record_stream: the tensor is not on a CUDA device")
        self._storage.buffer.record_stream(stream.number)

    def type_as(self, other: Tensor) -> Tensor:
        """Cast to ``other``'s dtype."""
        return self.to(other.dtype)


class Size(tuple):
    """A tensor's shape: a tuple of ints that prints as ``torch.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def numel(self) -> int:
        """Product of the sizes."""
        return numel(self)

    def __getitem__(self, item):
        result = super().__getitem__(item)
        return Size(result) if isinstance(item, slice) else result


#: Below this many elements a shape with no negative size cannot overflow a
#: byte count (8 bytes each): empty_tensor checks only shapes beyond it fully.
_CHECKED_NUMEL = 2**59


def empty_tensor(
    shape: Sequence[int], dtype, strides: Sequence[int] | None = None, *, device
) -> Tensor:
    """Allocate an uninitialised tensor (no autograd) on ``device``: the frontend's malloc.

    Row-major unless ``strides`` are given (they must describe a dense layout).
    ``device`` is where the output of the calling operation lives, which the
    operation computes from its operands (normally ``input.device``, or
    :func:`glasstorch.ops.core.common_device` of several); a creation function
    passes its ``device=`` argument.
    """
    shape = tuple(shape)
    count = numel(shape)
    if shape and (min(shape) < 0 or count >= _CHECKED_NUMEL or len(shape) > MAX_DIMS):
        count = check_storage_bytes(shape, dtype.itemsize)  # raises PyTorch's error
    strides = row_major_strides(shape) if strides is None else tuple(strides)
    return Tensor._make(new_storage(count, dtype.numpy, device), shape, strides, 0, dtype)


def new_storage(count: int, numpy_dtype, where) -> Storage:
    """A storage of ``count`` elements on device ``where``.

    Device memory comes from the dispatcher, the only kernel object that knows
    two devices (``kernels`` is the dispatcher whenever a CUDA device exists,
    and ``where`` can only be a CUDA device then).
    """
    if where is CPU or getattr(where, "type", where) == "cpu":
        try:
            return Storage(kernels.allocate(count, numpy_dtype))
        except MemoryError:
            raise host_out_of_memory(count * np.dtype(numpy_dtype).itemsize) from None
    return Storage(kernels.allocate(count, numpy_dtype, CUDA0), device=CUDA0)


def host_out_of_memory(nbytes: int) -> RuntimeError:
    """PyTorch's error when host memory cannot hold a new storage of ``nbytes`` bytes.

    NumPy raises MemoryError when the operating system refuses the
    allocation; PyTorch's CPU allocator raises this RuntimeError instead.
    """
    return RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
        f"memory: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)"
    )


def storage_to_host(storage: Storage) -> np.ndarray:
    """The storage's elements as a host NumPy array (a copy, which waits, for a GPU storage)."""
    if storage.device.type == "cpu":
        return storage.buffer
    buffer = storage.buffer
    host = np.empty(buffer.size, dtype=buffer.dtype)
    kernels.copy(Strided(host, (buffer.size,), (1,), 0), Strided(buffer, (buffer.size,), (1,), 0))
    return host


def storage_to_device(storage: Storage) -> Storage:
    """A GPU storage holding a CPU storage's elements (the storage itself if on the GPU)."""
    if storage.device.type == "cuda":
        return storage
    host = storage.buffer
    out = new_storage(host.size, host.dtype, CUDA0)
    kernels.copy(Strided(out.buffer, (host.size,), (1,), 0), Strided(host, (host.size,), (1,), 0))
    return out


def wrap_scalar(value, dtype) -> Tensor:
    """A Python number as a 0-d tensor of ``dtype`` (how scalars enter kernels)."""
    out = empty_tensor((), dtype, device=CPU)
    kernels.fill(out._strided(), dtype.to_python(value))
    return out


_function_module.Tensor = Tensor  # Function.apply's "is this a tensor?" test

# The operations are attached in glasstorch/ops/methods.py, which imports this module.
