"""Optimizers and learning-rate schedulers, shaped like ``torch.optim``.

SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD,
Rprop and LBFGS.

Optimizer math runs in fp32 whatever the gradients' dtype, parameters are
updated in place without recording a graph, and every built-in optimizer
takes ``step(found_inf=...)`` so a GradScaler can skip a step on the device.
"""

from cupynet import _lazy
from cupynet.optim.adagrad import Adadelta, Adagrad
from cupynet.optim.adam import Adam, AdamW
from cupynet.optim.adam_variants import Adamax, NAdam, RAdam
from cupynet.optim.asgd import ASGD
from cupynet.optim.lbfgs import LBFGS
from cupynet.optim.optimizer import Optimizer, required
from cupynet.optim.rmsprop import RMSprop
from cupynet.optim.rprop import Rprop
from cupynet.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
           "Rprop", "LBFGS", "lr_scheduler", "required"]

# NOTE: the schedulers (four modules) load on first use: cupynet.optim.lr_scheduler
__getattr__, __dir__ = _lazy.lazy_names(__name__, {"lr_scheduler": "cupynet.optim.lr_scheduler"})
