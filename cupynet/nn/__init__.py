"""``cupynet.nn``: Module, Parameter, layers, losses, ``functional``, ``init`` and ``utils`` (PyTorch's names)."""

from . import functional, init, utils
from .activation import (
                         ELU,
                         GELU,
                         GLU,
                         Dropout,
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
from .attention import MultiheadAttention
from .containers import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .linear import Flatten, Identity, Linear, Unflatten
from .loss import (
                         BCELoss,
                         BCEWithLogitsLoss,
                         CosineSimilarity,
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
from .normalization import BatchNorm1d, BatchNorm2d, Embedding, GroupNorm, LayerNorm
from .parameter import Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # recurrent layers (issue 13)
from .transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = [
    "functional", "init", "utils", "Module", "Parameter", "Sequential", "ModuleList", "ModuleDict",
    "Identity", "Linear", "Flatten", "Unflatten", "Conv1d", "Conv2d", "ConvTranspose2d",
    "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Dropout", "ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "Embedding", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "CrossEntropyLoss", "NLLLoss",
    "MSELoss", "L1Loss", "SmoothL1Loss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
    "Mish", "Hardswish", "Hardsigmoid", "ELU", "PReLU", "Softplus", "Hardtanh", "ReLU6", "GLU",
    "CosineSimilarity", "HuberLoss", "MarginRankingLoss", "SoftMarginLoss", "PoissonNLLLoss",
    # recurrent layers (issue 13)
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
]
