"""Distances of ``nn.functional``: ``pairwise_distance`` and ``cosine_similarity``."""

from __future__ import annotations

from glasstorch.tensor import Tensor


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``dot(x1, x2) / max(||x1|| * ||x2||, eps)`` along ``dim`` (the inputs broadcast)."""
    dot = (x1 * x2).sum(dim)
    norms = x1.norm(2, dim) * x2.norm(2, dim)
    return dot / norms.clamp_min(eps)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension (the inputs broadcast).

    Examples::

        >>> F.pairwise_distance(torch.zeros(2, 3), torch.ones(2, 3)).shape
        torch.Size([2])
    """
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)
