"""``torch.compile``: glasstorch has no compiler, so a compiled model is the model itself."""

from __future__ import annotations


def compile(model=None, **options):  # noqa: A001 - PyTorch's name
    """Return ``model`` itself: glasstorch has no compiler, so it runs the code as written.

    PyTorch's ``torch.compile`` traces a module or function and generates fused
    kernels; the result computes the same function. Programs that call it (as
    nanoGPT does) run here eagerly. Used as ``@torch.compile(...)`` with options
    only, it returns a decorator that does the same.
    """
    if model is None:
        return lambda function: function
    return model
