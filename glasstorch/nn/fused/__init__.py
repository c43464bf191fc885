"""Fused nodes: the speed tricks of ``nn``, kept apart from the plain meaning.

A fused node is an autograd :class:`~glasstorch.autograd.Function` that runs
one kernel of the contract (or a few) where the plain formula would record a
graph of many small operations: a LayerNorm written as tensor operations is
nine kernel calls forward and about twenty backward, each with a temporary the
size of the input; as a fused node it is one kernel each way, keeping only what
the backward kernel needs. The result is the same numbers, faster and in less
memory.

The plain meaning of each node is the composite in :mod:`glasstorch.nn.functional`
(``layer_norm``, ``_mse_formula``, ...), which is what a reader should learn
from; ``nn.functional`` calls the node here where it applies (float dtypes, no
recorded backward). A recorded backward (``create_graph=True``) evaluates that
formula again and lets autograd differentiate it (:mod:`.common`), so a
gradient of a gradient is the formula's own.

One file per topic: ``linear``, ``activation`` (GELU), ``normalization``,
``attention``, ``loss``, ``conv``, ``pooling`` and ``rnn`` (an LSTM layer).
"""
