"""``glasstorch.backends.cuda``: CUDA math switches, kept so programs can set them.

Programs written for GPUs turn on TensorFloat-32 matmuls
(``torch.backends.cuda.matmul.allow_tf32 = True``). glasstorch computes its
matrix products in the tensor's own precision whatever these say; they are
plain attributes that read back what was written.
"""


class _MatmulFlags:
    """The ``matmul`` switches: whether reduced-precision arithmetic is allowed."""

    def __init__(self) -> None:
        #: Allow TensorFloat-32 in float32 matmuls (PyTorch's default, False).
        self.allow_tf32 = False
        #: Allow reduced-precision reductions in float16 matmuls.
        self.allow_fp16_reduced_precision_reduction = True
        #: Allow reduced-precision reductions in bfloat16 matmuls.
        self.allow_bf16_reduced_precision_reduction = True


#: The matmul switches (``backends.cuda.matmul.allow_tf32``).
matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether this build of the library has PyTorch's CUDA backend: False."""
    return False
