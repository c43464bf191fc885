"""``nn.utils``: gradient clipping, parameter/vector conversion, ``rnn`` (padding sequences)
and the hook-based weight and spectral normalisations."""

from glasstorch.nn.utils import rnn
from glasstorch.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from glasstorch.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from glasstorch.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from glasstorch.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "parameters_to_vector",
    "vector_to_parameters",
    "rnn",
    "remove_spectral_norm",
    "remove_weight_norm",
    "spectral_norm",
    "weight_norm",
]
