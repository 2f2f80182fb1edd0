"""Optimizers (SGD, Adam, AdamW, RMSprop) and learning-rate schedulers, shaped like ``torch.optim``.

Optimizer math runs in fp32 whatever the gradients' dtype, parameters are
updated in place without recording a graph, and every built-in optimizer
takes ``step(found_inf=...)`` so a GradScaler can skip a step on the device.
"""

from cupynet.optim import lr_scheduler
from cupynet.optim.adam import Adam, AdamW
from cupynet.optim.optimizer import Optimizer, required
from cupynet.optim.rmsprop import RMSprop
from cupynet.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler", "required"]
