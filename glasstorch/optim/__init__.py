"""Optimizers (``glasstorch.optim``) and learning-rate schedulers (``.lr_scheduler``).

Each optimizer keeps its bookkeeping (parameter groups, state, checkpoints) in
Python and performs its update through one fused kernel of the kernel contract
per parameter (``sgd_step``, ``adam_step``, ``rmsprop_step``, ``adagrad_step``,
``adadelta_step``), so every tier can make the update fast. ``Adamax``, ``NAdam``,
``RAdam`` and ``LBFGS`` are written with tensor operations instead (no fused kernel).

Example::

    >>> import glasstorch as torch
    >>> w = torch.zeros(3, requires_grad=True)
    >>> opt = torch.optim.Adam([w], lr=0.1)
    >>> sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    >>> for _ in range(100):
    ...     opt.zero_grad()
    ...     loss = ((w - 1) ** 2).sum()
    ...     loss.backward()
    ...     opt.step()
    ...     sched.step()
"""

from glasstorch.optim import lr_scheduler
from glasstorch.optim.adadelta import Adadelta
from glasstorch.optim.adagrad import Adagrad
from glasstorch.optim.adam import Adam
from glasstorch.optim.adamax import Adamax
from glasstorch.optim.adamw import AdamW
from glasstorch.optim.lbfgs import LBFGS
from glasstorch.optim.nadam import NAdam
from glasstorch.optim.optimizer import Optimizer
from glasstorch.optim.radam import RAdam
from glasstorch.optim.rmsprop import RMSprop
from glasstorch.optim.sgd import SGD

__all__ = [
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "SGD",
    "lr_scheduler",
]
