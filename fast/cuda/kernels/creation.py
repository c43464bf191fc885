"""Creation kernels of the CUDA tier: arange and linspace (``fast/cuda/creation.cu``).

(``allocate`` is the base class's: device memory from the caching allocator.)
"""

from __future__ import annotations

from glasstorch._kernels import Strided


class CreationKernels:
    """arange, linspace."""

    def arange(self, out: Strided, start, step) -> None:
        """``out[i] = start + i * step`` as the contract has it: exact integers
        for an integer ``out``, PyTorch's vectorised double loop for a float one."""
        n = out.shape[0]
        sfx = self.suffix(out)
        if out.buffer.dtype.kind == "f":
            name, args = f"arange_float_{sfx}", (float(start), float(step))
        else:
            name, args = f"arange_int_{sfx}", (start, step)
        self.launch("creation.cu", name, n, self.ptr(out), out.strides[0], n, *args)

    def linspace(self, out: Strided, start: float, end: float) -> None:
        """Evenly spaced values from ``start`` to ``end``, both included, as the
        contract computes them (the kernel works out the step in the output's
        arithmetic: float32 for a float32 output, else double)."""
        n = out.shape[0]
        self.launch(
            "creation.cu", f"linspace_{self.suffix(out)}", n, self.ptr(out), out.strides[0], n,
            float(start), float(end),
        )  # fmt: skip
