"""``ReduceLROnPlateau``: cut the learning rate when a monitored metric stops improving.

Unlike the epoch-driven schedulers, ``step(metric)`` takes the metric (a
validation loss, an accuracy): after more than ``patience`` epochs without an
improvement beyond ``threshold``, every group's lr is multiplied by
``factor`` (never below its ``min_lr``, and only when the change exceeds
``eps``), then ``cooldown`` epochs pass before counting again. The same
double-precision comparisons as ``torch.optim.lr_scheduler.ReduceLROnPlateau``.
"""

from __future__ import annotations

import math
import numbers

from cupynet.optim import _common
from cupynet.optim.lr_base import per_group
from cupynet.optim.optimizer import Optimizer

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau:
    """Reduce each group's lr by ``factor`` once the metric has not improved for ``patience`` epochs.

    Args:
        optimizer: the Optimizer.
        mode: ``"min"`` (the metric should fall, e.g. a loss) or ``"max"`` (it should rise, e.g. accuracy).
        factor: multiplies the lr at each reduction (< 1).
        patience: epochs without improvement tolerated before a reduction.
        threshold: how much better counts as better.
        threshold_mode: ``"rel"`` (better than ``best * (1 -/+ threshold)``) or ``"abs"`` (``best -/+ threshold``).
        cooldown: epochs to wait after a reduction before counting bad epochs again.
        min_lr: lower bound of the lr (or one per group).
        eps: a reduction smaller than this is not applied.
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ReduceLROnPlateau: {type(optimizer).__name__} is not an Optimizer")
        if not isinstance(factor, numbers.Real) or factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: Factor should be < 1.0, got {factor!r}")
        for name, value in (("patience", patience), ("cooldown", cooldown)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"ReduceLROnPlateau: {name} must be a non-negative int, got {value!r}")
        self.optimizer, self.factor = optimizer, factor
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr
        self.min_lrs = per_group("ReduceLROnPlateau", "min_lr", optimizer, min_lr)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode, threshold, threshold_mode) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown! (expected 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold mode {threshold_mode!r} is unknown! (expected 'rel' or "
                             "'abs')")
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf

    def _reset(self) -> None:
        self.best, self.cooldown_counter, self.num_bad_epochs = self.mode_worse, 0, 0

    @property
    def in_cooldown(self) -> bool:
        """Whether a reduction happened less than ``cooldown`` epochs ago."""
        return self.cooldown_counter > 0

    def is_better(self, a, best) -> bool:
        """Whether metric value ``a`` improves on ``best`` by more than the threshold.

        Args:
            a: the new metric value.
            best: the best value so far.
        """
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch=None) -> None:
        """Record one epoch's metric; reduce the lrs if it has not improved for more than ``patience`` epochs.

        Args:
            metrics: the metric (a number or a one-element Tensor; read on the host).
            epoch: deprecated in PyTorch; sets ``last_epoch`` when given.
        """
        current = _common.host_value("ReduceLROnPlateau.step", "metrics", metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # NOTE: bad epochs during the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"ReduceLROnPlateau: the optimizer has {len(groups)} param groups but min_lr "
                                   f"gave {len(self.min_lrs)} values (a group was added?); set min_lrs to match")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    def get_last_lr(self) -> list:
        """The learning rates after the last ``step()``, one per param group."""
        return self._last_lr

    def state_dict(self) -> dict:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict) -> None:
        """Restore the attributes saved by ``state_dict()``.

        Args:
            state_dict: the dict from ``state_dict()``.
        """
        if not isinstance(state_dict, dict) or "best" not in state_dict or "mode" not in state_dict:
            raise ValueError("ReduceLROnPlateau.load_state_dict: expected the dict from state_dict() (with 'best' "
                             f"and 'mode'), got {type(state_dict).__name__}")
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
