"""``nn.utils``: gradient clipping, parameter/vector conversion and ``rnn`` (padding sequences)."""

from glasstorch.nn.utils import rnn
from glasstorch.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from glasstorch.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "parameters_to_vector",
    "vector_to_parameters",
    "rnn",
]
