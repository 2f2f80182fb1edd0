"""Optimizers and learning-rate schedulers, shaped like ``torch.optim``.

SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD,
Rprop and LBFGS.

Optimizer math runs in fp32 whatever the gradients' dtype, parameters are
updated in place without recording a graph, and every built-in optimizer
takes ``step(found_inf=...)`` so a GradScaler can skip a step on the device.
"""

from cupynet import _lazy
from cupynet.optim.adam import Adam, AdamW
from cupynet.optim.optimizer import Optimizer, required
from cupynet.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
           "Rprop", "LBFGS", "lr_scheduler", "required"]

# NOTE: SGD, Adam and AdamW load with the package; the other optimizers and the schedulers (four modules)
# load on first use (cupynet.optim.RMSprop, cupynet.optim.lr_scheduler)
__getattr__, __dir__ = _lazy.lazy_names(__name__, {
    "lr_scheduler": "cupynet.optim.lr_scheduler",
    "Adadelta": "cupynet.optim.adagrad:Adadelta", "Adagrad": "cupynet.optim.adagrad:Adagrad",
    "Adamax": "cupynet.optim.adam_variants:Adamax", "NAdam": "cupynet.optim.adam_variants:NAdam",
    "RAdam": "cupynet.optim.adam_variants:RAdam", "ASGD": "cupynet.optim.asgd:ASGD",
    "LBFGS": "cupynet.optim.lbfgs:LBFGS", "RMSprop": "cupynet.optim.rmsprop:RMSprop",
    "Rprop": "cupynet.optim.rprop:Rprop",
})
