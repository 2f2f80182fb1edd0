"""``OneCycleLR``: the 1cycle policy (warm up to ``max_lr``, anneal far below the start), as PyTorch has it."""

from __future__ import annotations

import math

from cupynet.optim.lr_scheduler import LRScheduler
from cupynet.optim.optimizer import Optimizer

__all__ = ["OneCycleLR"]


def _per_group(name, optimizer, value) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"OneCycleLR: expected {len(optimizer.param_groups)} values for {name}, got "
                             f"{len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


def _phases(total_steps, pct_start, three_phase) -> list:
    warm_end = float(pct_start * total_steps) - 1
    if three_phase:
        return [
            dict(end_step=warm_end, start_lr="initial_lr", end_lr="max_lr", start_momentum="max_momentum",
                 end_momentum="base_momentum"),
            dict(end_step=float(2 * pct_start * total_steps) - 2, start_lr="max_lr", end_lr="initial_lr",
                 start_momentum="base_momentum", end_momentum="max_momentum"),
            dict(end_step=total_steps - 1, start_lr="initial_lr", end_lr="min_lr", start_momentum="max_momentum",
                 end_momentum="max_momentum"),
        ]
    return [
        dict(end_step=warm_end, start_lr="initial_lr", end_lr="max_lr", start_momentum="max_momentum",
             end_momentum="base_momentum"),
        dict(end_step=total_steps - 1, start_lr="max_lr", end_lr="min_lr", start_momentum="base_momentum",
             end_momentum="max_momentum"),
    ]


def _total_steps(total_steps, epochs, steps_per_epoch) -> int:
    if total_steps is not None:
        if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"OneCycleLR: Expected positive integer total_steps, but got {total_steps!r}")
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"OneCycleLR: Expected positive integer epochs, but got {epochs!r}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError(f"OneCycleLR: Expected positive integer steps_per_epoch, but got {steps_per_epoch!r}")
        return epochs * steps_per_epoch
    raise ValueError("OneCycleLR: You must define either total_steps OR (epochs AND steps_per_epoch)")


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr from ``max_lr/div_factor`` up to ``max_lr``, then down to ``initial/final_div``.

    With ``cycle_momentum`` the momentum (or Adam's beta1) moves inversely between ``max_momentum`` and
    ``base_momentum``. Step it once per batch, ``total_steps`` times at most.

    Args:
        optimizer: the Optimizer.
        max_lr: peak learning rate (or one per group).
        total_steps: number of steps in the cycle (or give epochs and steps_per_epoch).
        epochs: number of epochs.
        steps_per_epoch: steps per epoch.
        pct_start: fraction of the cycle spent increasing the lr.
        anneal_strategy: ``"cos"`` or ``"linear"``.
        cycle_momentum: also cycle momentum / beta1.
        base_momentum: lower momentum bound (or one per group).
        max_momentum: upper momentum bound (or one per group).
        div_factor: ``initial_lr = max_lr / div_factor``.
        final_div_factor: ``min_lr = initial_lr / final_div_factor``.
        three_phase: use a third phase that anneals to ``min_lr`` after a symmetric rise and fall.
        last_epoch: index of the last step (-1: fresh).
    """

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"OneCycleLR: {type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"OneCycleLR: Expected float between 0 and 1 pct_start, but got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy!r}")
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum and "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError("OneCycleLR: optimizer must support momentum or beta1 with `cycle_momentum` option "
                             f"enabled; {type(optimizer).__name__} has neither")
        if last_epoch == -1:
            for peak, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        if cycle_momentum:
            self.use_beta1 = "betas" in optimizer.defaults
            maxes = _per_group("max_momentum", optimizer, max_momentum)
            bases = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for top, bottom, group in zip(maxes, bases, optimizer.param_groups):
                    self._set_momentum(group, top)
                    group["max_momentum"], group["base_momentum"] = top, bottom
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group, value):
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form).

        Args:
            None.
        """
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: Tried to step {step} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                        self._set_momentum(group, momentum)
                    break
                start_step = phase["end_step"]
        return lrs
