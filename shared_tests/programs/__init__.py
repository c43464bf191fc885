"""Public-style PyTorch programs, each written with ``import torch`` and run unchanged.

The loader in :mod:`programs.loader` executes a program's source with ``torch`` bound to
glasstorch or to PyTorch, so one text runs on both and the numbers can be compared.
"""
