"""``glasstorch.backends.cudnn``: cuDNN's flags, kept so programs can set them.

glasstorch has no cuDNN; the flags are plain module attributes that programs
may read and assign (``torch.backends.cudnn.deterministic = True``) with no
effect on the computation.
"""

#: Whether cuDNN may be used (PyTorch's default, True).
enabled = True
#: Whether to pick deterministic algorithms only.
deterministic = False
#: Whether to benchmark algorithms and keep the fastest.
benchmark = False
#: Whether cuDNN convolutions may use TensorFloat-32 (PyTorch's default, True).
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN can be used: False (there is no CUDA device)."""
    return False
