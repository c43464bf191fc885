"""Utilities that are not tensor operations.

``glasstorch.utils.data`` (datasets and loaders) and ``glasstorch.utils.dlpack``
(zero-copy exchange with other array libraries).
"""

from glasstorch.utils import data, dlpack
