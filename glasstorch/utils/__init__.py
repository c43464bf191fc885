"""Utilities that are not tensor operations: ``glasstorch.utils.data`` (datasets and loaders)."""

from glasstorch.utils import data
