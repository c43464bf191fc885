"""The building blocks of ``glasstorch.nn``, one file per family."""

from glasstorch.nn.modules.activation import (
    ELU,
    GELU,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from glasstorch.nn.modules.attention import MultiheadAttention
from glasstorch.nn.modules.batchnorm import BatchNorm1d
from glasstorch.nn.modules.container import ModuleDict, ModuleList, Sequential
from glasstorch.nn.modules.dropout import Dropout
from glasstorch.nn.modules.linear import Flatten, Identity, Linear, Unflatten
from glasstorch.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from glasstorch.nn.modules.module import Module
from glasstorch.nn.modules.normalization import LayerNorm

# Sequence models: recurrent layers and cells, attention.
from glasstorch.nn.modules.rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from glasstorch.nn.modules.sparse import Embedding
from glasstorch.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "CrossEntropyLoss",
    "Dropout",
    "ELU",
    "Embedding",
    "Flatten",
    "GELU",
    "HuberLoss",
    "Identity",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSigmoid",
    "LogSoftmax",
    "MSELoss",
    "Module",
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "Unflatten",
    # Sequence models.
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "RNN",
    "RNNBase",
    "RNNCell",
    "RNNCellBase",
    "MultiheadAttention",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]

# Convolutional networks: convolution, pooling, image normalisation, resampling.
from glasstorch.nn.modules.batchnorm import BatchNorm2d  # noqa: E402
from glasstorch.nn.modules.conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: E402
from glasstorch.nn.modules.dropout import Dropout2d  # noqa: E402
from glasstorch.nn.modules.normalization import GroupNorm  # noqa: E402
from glasstorch.nn.modules.pooling import (  # noqa: E402
    AdaptiveAvgPool2d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from glasstorch.nn.modules.upsampling import Fold, Unfold, Upsample  # noqa: E402

__all__ += [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "Dropout2d",
    "Fold",
    "GroupNorm",
    "MaxPool1d",
    "MaxPool2d",
    "Unfold",
    "Upsample",
]

# More layers public programs use (instance norm, 1-D and adaptive pooling,
# embedding bags, bilinear, parameter containers, ranking and embedding losses).
from glasstorch.nn.modules.activation import (  # noqa: E402
    CELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    PairwiseDistance,
    ReLU6,
    Softmin,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from glasstorch.nn.modules.container import ParameterDict, ParameterList  # noqa: E402
from glasstorch.nn.modules.conv import ConvTranspose1d  # noqa: E402
from glasstorch.nn.modules.linear import Bilinear  # noqa: E402
from glasstorch.nn.modules.loss import (  # noqa: E402
    CosineEmbeddingLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    TripletMarginLoss,
)
from glasstorch.nn.modules.normalization import (  # noqa: E402
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    RMSNorm,
)
from glasstorch.nn.modules.pooling import (  # noqa: E402
    AdaptiveAvgPool1d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool3d,
    MaxPool3d,
)
from glasstorch.nn.modules.sparse import EmbeddingBag  # noqa: E402

_MORE_LAYERS = [
    "AdaptiveAvgPool1d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool3d",
    "Bilinear",
    "CELU",
    "ConvTranspose1d",
    "CosineEmbeddingLoss",
    "EmbeddingBag",
    "GLU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "HingeEmbeddingLoss",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "MarginRankingLoss",
    "MaxPool3d",
    "PairwiseDistance",
    "ParameterDict",
    "ParameterList",
    "RMSNorm",
    "ReLU6",
    "SELU",
    "Softmin",
    "Softshrink",
    "Softsign",
    "Tanhshrink",
    "Threshold",
    "TripletMarginLoss",
]
__all__ += _MORE_LAYERS

# Layers from tutorials and courses (local response norm, channel and alpha dropouts,
# upsampling aliases, channel shuffle, rrelu, five more losses, unpooling, power-average
# and 3-D adaptive pooling, 3-D convolution and batch norm).
from glasstorch.nn.modules.activation import RReLU, Softmax2d  # noqa: E402
from glasstorch.nn.modules.batchnorm import BatchNorm3d  # noqa: E402
from glasstorch.nn.modules.conv import Conv3d  # noqa: E402
from glasstorch.nn.modules.dropout import (  # noqa: E402
    AlphaDropout,
    Dropout1d,
    Dropout3d,
    FeatureAlphaDropout,
)
from glasstorch.nn.modules.loss import (  # noqa: E402
    GaussianNLLLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SoftMarginLoss,
)
from glasstorch.nn.modules.normalization import LocalResponseNorm  # noqa: E402
from glasstorch.nn.modules.padding import ChannelShuffle  # noqa: E402
from glasstorch.nn.modules.pooling import (  # noqa: E402
    AdaptiveAvgPool3d,
    AdaptiveMaxPool3d,
    LPPool1d,
    LPPool2d,
    MaxUnpool1d,
    MaxUnpool2d,
)
from glasstorch.nn.modules.upsampling import (  # noqa: E402
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

_TUTORIAL_LAYERS = [
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool3d",
    "AlphaDropout",
    "BatchNorm3d",
    "ChannelShuffle",
    "Conv3d",
    "Dropout1d",
    "Dropout3d",
    "FeatureAlphaDropout",
    "GaussianNLLLoss",
    "LPPool1d",
    "LPPool2d",
    "LocalResponseNorm",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "PoissonNLLLoss",
    "RReLU",
    "SoftMarginLoss",
    "Softmax2d",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
]
__all__ += _TUTORIAL_LAYERS
