"""``cupynet.nn``: Module, Parameter, layers, losses, ``functional``, ``init`` and ``utils`` (PyTorch's names)."""

from .. import _lazy
from . import functional, init, utils
from .activation import (
                         ELU,
                         GELU,
                         GLU,
                         Hardsigmoid,
                         Hardswish,
                         Hardtanh,
                         LeakyReLU,
                         LogSoftmax,
                         Mish,
                         PReLU,
                         ReLU,
                         ReLU6,
                         Sigmoid,
                         SiLU,
                         Softmax,
                         Softplus,
                         Tanh,
)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d
from .flatten import Flatten, Unflatten
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Bilinear, Identity, Linear
from .loss import (
                         BCELoss,
                         BCEWithLogitsLoss,
                         CrossEntropyLoss,
                         HuberLoss,
                         KLDivLoss,
                         L1Loss,
                         MarginRankingLoss,
                         MSELoss,
                         NLLLoss,
                         PoissonNLLLoss,
                         SmoothL1Loss,
                         SoftMarginLoss,
)
from .module import Module

# the layers PyTorch programs use beyond the basics (padding, upsampling, norms, containers, decoders, 1-d/3-d)
from .normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm
from .padding import (
                         CircularPad1d,
                         CircularPad2d,
                         CircularPad3d,
                         ConstantPad1d,
                         ConstantPad2d,
                         ConstantPad3d,
                         ReflectionPad1d,
                         ReflectionPad2d,
                         ReflectionPad3d,
                         ReplicationPad1d,
                         ReplicationPad2d,
                         ReplicationPad3d,
                         ZeroPad1d,
                         ZeroPad2d,
                         ZeroPad3d,
)
from .parameter import Parameter
from .pooling import (
                         AdaptiveAvgPool1d,
                         AdaptiveAvgPool2d,
                         AdaptiveAvgPool3d,
                         AdaptiveMaxPool1d,
                         AdaptiveMaxPool2d,
                         AdaptiveMaxPool3d,
                         AvgPool1d,
                         AvgPool2d,
                         AvgPool3d,
                         MaxPool1d,
                         MaxPool2d,
                         MaxPool3d,
                         MaxUnpool1d,
                         MaxUnpool2d,
                         MaxUnpool3d,
)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "functional", "init", "modules", "utils", "Module", "Parameter", "Sequential", "ModuleList", "ModuleDict",
    "Identity", "Linear", "Flatten", "Unflatten", "Conv1d", "Conv2d", "ConvTranspose2d",
    "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Dropout", "ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "Embedding", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "CrossEntropyLoss", "NLLLoss",
    "MSELoss", "L1Loss", "SmoothL1Loss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
    "Mish", "Hardswish", "Hardsigmoid", "ELU", "PReLU", "Softplus", "Hardtanh", "ReLU6", "GLU",
    "CosineSimilarity", "HuberLoss", "MarginRankingLoss", "SoftMarginLoss", "PoissonNLLLoss",
    # recurrent layers
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
]
__all__ += [  # the layers PyTorch programs use beyond the basics
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "PixelShuffle", "PixelUnshuffle", "Unfold", "Fold", "RMSNorm", "BatchNorm3d", "InstanceNorm1d",
    "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "ParameterList", "ParameterDict",
    "TransformerDecoderLayer", "TransformerDecoder", "Transformer", "Conv3d", "ConvTranspose1d", "ConvTranspose3d",
    "MaxPool1d", "MaxPool3d", "AvgPool1d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool3d", "Dropout1d",
    "Dropout2d", "Dropout3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "MaxUnpool1d",
    "MaxUnpool2d", "MaxUnpool3d", "SyncBatchNorm",
]

# the remaining activation layers and losses of torch.nn, EmbeddingBag (torch.nn.modules.sparse)
from .activation import (  # noqa: E402 - one grouped block, kept apart from the imports above
    CELU,
    SELU,
    Hardshrink,
    LogSigmoid,
    RReLU,
    Softmax2d,
    Softmin,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from .loss import (  # noqa: E402
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    TripletMarginLoss,
)
from .sparse import Embedding, EmbeddingBag  # noqa: E402

__all__ += [
    "SELU", "CELU", "Softsign", "LogSigmoid", "Tanhshrink", "Threshold", "Softshrink", "Hardshrink", "RReLU",
    "Softmin", "Softmax2d", "PairwiseDistance", "TripletMarginLoss", "CosineEmbeddingLoss", "MultiLabelSoftMarginLoss",
    "GaussianNLLLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "HingeEmbeddingLoss", "EmbeddingBag", "Bilinear",
]

# NOTE: torch.nn.modules' submodule paths (torch.nn.modules.rnn.LSTM) are compatibility surface: cupynet/compat/.
# The recurrent, transformer and attention layers and a few rarer ones load on first use (cupynet.nn.LSTM).
__getattr__, __dir__ = _lazy.lazy_names(__name__, {
    "modules": "cupynet.compat.nn_modules",
    "DataParallel": "cupynet.compat.data_parallel:DataParallel",
    "parallel": "cupynet.nn.parallel",
    "GRU": "cupynet.nn.rnn:GRU",
    "LSTM": "cupynet.nn.rnn:LSTM",
    "RNN": "cupynet.nn.rnn:RNN",
    "GRUCell": "cupynet.nn.rnn:GRUCell",
    "LSTMCell": "cupynet.nn.rnn:LSTMCell",
    "RNNBase": "cupynet.nn.rnn:RNNBase",
    "RNNCell": "cupynet.nn.rnn:RNNCell",
    "RNNCellBase": "cupynet.nn.rnn:RNNCellBase",
    "Transformer": "cupynet.nn.transformer:Transformer",
    "TransformerDecoder": "cupynet.nn.transformer:TransformerDecoder",
    "TransformerDecoderLayer": "cupynet.nn.transformer:TransformerDecoderLayer",
    "TransformerEncoder": "cupynet.nn.transformer:TransformerEncoder",
    "TransformerEncoderLayer": "cupynet.nn.transformer:TransformerEncoderLayer",
    "MultiheadAttention": "cupynet.nn.attention:MultiheadAttention",
    "Fold": "cupynet.nn.fold:Fold",
    "Unfold": "cupynet.nn.fold:Unfold",
    "PixelShuffle": "cupynet.nn.pixelshuffle:PixelShuffle",
    "PixelUnshuffle": "cupynet.nn.pixelshuffle:PixelUnshuffle",
    "CosineSimilarity": "cupynet.nn.distance:CosineSimilarity",
    "PairwiseDistance": "cupynet.nn.distance:PairwiseDistance",
})
