"""``torch.nn.modules`` and its submodules: torch's module paths for cupynet's own layer classes.

Reached as ``cupynet.nn.modules`` (``cupynet.nn`` loads this package on first use) and, under
``cupynet run``, as ``torch.nn.modules``.

A program names a class by the module torch defines it in, e.g. the allow-list of
``torch.load(f, weights_only=True)`` in pytorch/examples word_language_model:
``torch.nn.modules.rnn.LSTM``, ``torch.nn.modules.sparse.Embedding``. Each submodule here
re-exports cupynet's real classes from ``cupynet.nn`` (nothing is implemented here), one file per
torch submodule, generated from ``TORCH_NN_MODULES`` by ``scripts/gen_nn_modules.py``.
"""

import importlib

# NOTE: torch.nn.modules.<name> -> {cupynet.nn module: the classes it provides}. tests/test_nn_modules.py
# checks that each file matches this table, and that torch has each class under that very submodule.
# Each cupynet.nn file is named after torch's submodule, except three: MultiheadAttention and
# NonDynamicallyQuantizableLinear have their own attention.py, and the containers' file is containers.py.
TORCH_NN_MODULES = {
    "activation": {"activation": ("CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish",
                                  "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "RReLU",
                                  "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin",
                                  "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold"),
                   "attention": ("MultiheadAttention",)},
    "batchnorm": {"batchnorm": ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "_BatchNorm",
                                "_NormBase")},
    "container": {"containers": ("ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential")},
    "conv": {"conv": ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
                      "_ConvNd", "_ConvTransposeNd")},
    "distance": {"distance": ("CosineSimilarity", "PairwiseDistance")},
    "dropout": {"dropout": ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "_DropoutNd")},
    "flatten": {"flatten": ("Flatten", "Unflatten")},
    "fold": {"fold": ("Fold", "Unfold")},
    "instancenorm": {"instancenorm": ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d")},
    "linear": {"linear": ("Bilinear", "Identity", "Linear"), "attention": ("NonDynamicallyQuantizableLinear",)},
    "loss": {"loss": ("BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss",
                      "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss",
                      "MSELoss", "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
                      "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss", "SmoothL1Loss", "SoftMarginLoss",
                      "TripletMarginLoss")},
    "module": {"module": ("Module",)},
    "normalization": {"normalization": ("GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm")},
    "padding": {"padding": ("CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
                            "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
                            "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d",
                            "ZeroPad2d", "ZeroPad3d", "_CircularPadNd", "_ConstantPadNd", "_ReflectionPadNd",
                            "_ReplicationPadNd")},
    "pixelshuffle": {"pixelshuffle": ("PixelShuffle", "PixelUnshuffle")},
    "pooling": {"pooling": ("AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
                            "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
                            "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
                            "_AdaptiveAvgPoolNd", "_AdaptiveMaxPoolNd", "_AvgPoolNd", "_MaxPoolNd")},
    "rnn": {"rnn": ("GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase")},
    "sparse": {"sparse": ("Embedding", "EmbeddingBag")},
    "transformer": {"transformer": ("Transformer", "TransformerDecoder", "TransformerDecoderLayer",
                                    "TransformerEncoder", "TransformerEncoderLayer")},
    "upsampling": {"upsampling": ("Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d")},
}

__all__ = ["TORCH_NN_MODULES", *TORCH_NN_MODULES]


def __getattr__(name):
    """``torch.nn.modules.<name>``: the submodule, imported on first use (``torch.nn.modules.rnn.LSTM`` works).

    Args:
        name: a submodule name of the table.
    """
    if name in TORCH_NN_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
