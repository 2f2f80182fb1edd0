"""``LRScheduler``: the base of the epoch-driven learning-rate schedulers (``torch.optim.lr_scheduler``).

A scheduler changes ``group["lr"]`` of its optimizer's param groups; call
``scheduler.step()`` after ``optimizer.step()``. ``state_dict()`` holds every
attribute except the optimizer, so a loaded scheduler continues the very same
sequence.
"""

from __future__ import annotations

from cupynet.checks import check_number, positive_int
from cupynet.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "positive_int", "per_group"]


class LRScheduler:
    """Base class: tracks ``last_epoch``, ``base_lrs`` and writes each step's lrs into the param groups.

    Args:
        optimizer: the Optimizer whose ``lr`` is scheduled.
        last_epoch: index of the last epoch; -1 starts fresh (and records ``initial_lr`` in each group).
    """

    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: {type(optimizer).__name__} is not an Optimizer")
        if isinstance(last_epoch, bool) or not isinstance(last_epoch, int) or last_epoch < -1:
            raise ValueError(f"{type(self).__name__}: last_epoch must be an int >= -1, got {last_epoch!r}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0 (load the optimizer's state first)")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        """Take the constructor's step (which sets the epoch-0 learning rates)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        """The learning rates for ``last_epoch`` (recursive form; subclasses implement it)."""
        raise NotImplementedError

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set, one per param group."""
        return self._last_lr

    def step(self, epoch=None):
        """Advance one epoch (or jump to ``epoch`` with the closed form) and update the optimizer's lrs.

        Args:
            epoch: deprecated in PyTorch; sets ``last_epoch`` directly when given.
        """
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _group_lrs(self) -> list:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict) -> None:
        """Restore attributes saved by ``state_dict()``.

        Args:
            state_dict: the dict from ``state_dict()``.
        """
        if not isinstance(state_dict, dict) or "last_epoch" not in state_dict:
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected the dict from state_dict() "
                             f"(with 'last_epoch'), got {type(state_dict).__name__}")
        self.__dict__.update(state_dict)


def per_group(owner, name, optimizer, value) -> list:
    """One value per param group: a list/tuple of that length, or one value repeated.

    Args:
        owner: the scheduler's name, for the message.
        name: the argument's name.
        optimizer: the Optimizer.
        value: a number or a list of them.
    """
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{owner}: expected {len(optimizer.param_groups)} values for {name}, got {len(value)}")
        values = list(value)
    else:
        values = [value] * len(optimizer.param_groups)
    for i, v in enumerate(values):
        check_number(owner, name, v, low=None, label=f"{name}[{i}]" if len(values) > 1 else name)
    return values
