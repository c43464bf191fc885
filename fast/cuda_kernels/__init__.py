"""The CUDA tier's kernels: the kernel contract on a GPU (or the CUDA simulator).

Mirrors the fast tier's layout: one mixin per kernel family, each binding
contract methods to the ``.cu`` kernels of ``fast/cuda/<family>.cu``, all on top
of :class:`~glasstorch.fast.cuda_kernels._base.CudaKernelsBase` (the launch
helpers). :func:`make_cuda_kernels` composes the mixins listed in
:data:`FAMILIES` into one object. The dispatcher (:mod:`glasstorch._dispatch`)
sends a contract call here when its tensors live on the GPU.

A contract kernel that no family implements yet raises ``NotImplementedError``
("Could not run '<kernel>' with arguments from the 'CUDA' backend ..."), never
a silent fallback to the CPU.
"""

from __future__ import annotations

import importlib

from glasstorch._kernels import Kernels, contract_kernel_names

from ._base import CudaKernelsBase

#: Each kernel family: (module in this package, mixin class name).
FAMILIES = (
    ("elementwise", "ElementwiseKernels"),
    ("reductions", "ReductionKernels"),
    ("linalg", "LinalgKernels"),
    ("rng", "RandomKernels"),
    ("slices", "SliceKernels"),
    ("nn", "NNKernels"),
    ("optim", "OptimKernels"),
    ("creation", "CreationKernels"),
    ("indexing", "IndexingKernels"),
    ("sorting", "SortingKernels"),
    ("conv", "ConvKernels"),
    ("rnn", "LSTMCellKernels"),
    ("transformer", "TransformerKernels"),
)


def _not_implemented(name: str):
    def kernel(self, *args, **kwargs):
        raise NotImplementedError(
            f"Could not run '{name}' with arguments from the 'CUDA' backend "
            "(glasstorch's CUDA tier does not implement it yet)"
        )

    kernel.__name__ = name
    kernel.__doc__ = f"``{name}`` has no CUDA kernel yet: raises NotImplementedError."
    kernel._not_implemented = True
    return kernel


def missing_cuda_kernels() -> list[str]:
    """Contract kernels that no CUDA family implements."""
    cls = _compose()
    return [n for n in contract_kernel_names() if getattr(cls, n) is getattr(Kernels, n)]


def _compose() -> type:
    mixins = [
        getattr(importlib.import_module(f"{__name__}.{module}"), cls) for module, cls in FAMILIES
    ]
    return type("CudaKernels", (*mixins, CudaKernelsBase), {})


def make_cuda_kernels(driver) -> Kernels:
    """The CUDA kernels over ``driver``; unimplemented contract kernels raise when called."""
    cls = _compose()
    for name in contract_kernel_names():
        if getattr(cls, name) is getattr(Kernels, name):
            setattr(cls, name, _not_implemented(name))
    return cls(driver)
