"""Cyclic learning-rate schedules: ``OneCycleLR``, ``CyclicLR`` and ``CosineAnnealingWarmRestarts``.

Each is the same double-precision formula in the same order as
``torch.optim.lr_scheduler``, so the lr sequences are equal to the bit.
"""

from __future__ import annotations

import math
import types

from cupynet.optim.lr_base import LRScheduler, per_group
from cupynet.optim.optimizer import Optimizer

__all__ = ["OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts"]


# ---- OneCycleLR: the 1cycle policy (warm up to max_lr, anneal far below the start), as PyTorch has it ----
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


class _MomentumCycling(LRScheduler):
    """What OneCycleLR and CyclicLR share: cycling ``momentum`` (or Adam's beta1) against the lr."""

    def _check_momentum(self, optimizer, cycle_momentum) -> None:
        self.cycle_momentum = cycle_momentum
        if cycle_momentum and "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError(f"{type(self).__name__}: optimizer must support momentum or beta1 with "
                             f"`cycle_momentum` option enabled; {type(optimizer).__name__} has neither")
        self.use_beta1 = "betas" in optimizer.defaults

    def _start_momentum(self, optimizer, base_momentum, max_momentum, last_epoch) -> tuple:
        name = type(self).__name__
        maxes = per_group(name, "max_momentum", optimizer, max_momentum)
        bases = per_group(name, "base_momentum", optimizer, base_momentum)
        if last_epoch == -1:
            for top, bottom, group in zip(maxes, bases, optimizer.param_groups):
                self._set_momentum(group, top)
                group["max_momentum"], group["base_momentum"] = top, bottom
        return bases, maxes

    def _set_momentum(self, group, value):
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value


class OneCycleLR(_MomentumCycling):
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
        max_lrs = per_group("OneCycleLR", "max_lr", optimizer, max_lr)
        self._check_momentum(optimizer, cycle_momentum)
        if last_epoch == -1:
            for peak, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        if cycle_momentum:
            self._start_momentum(optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
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


def _triangular(x):
    return 1.0


def _triangular2(x):
    return 1 / (2.0 ** (x - 1))


class CyclicLR(_MomentumCycling):
    """Cycle the lr between ``base_lr`` and ``max_lr`` (triangular, triangular2, exp_range or your ``scale_fn``).

    Step it once per batch. With ``cycle_momentum`` the momentum (or beta1) moves inversely, between
    ``max_momentum`` and ``base_momentum``.

    Args:
        optimizer: the Optimizer.
        base_lr: lower lr bound (or one per group); the group lrs are set to it.
        max_lr: upper lr bound (or one per group).
        step_size_up: iterations of the rising half of a cycle.
        step_size_down: iterations of the falling half (default: ``step_size_up``).
        mode: ``"triangular"``, ``"triangular2"`` (amplitude halves each cycle) or ``"exp_range"``
            (amplitude times ``gamma**iteration``).
        gamma: the ``exp_range`` base.
        scale_fn: a custom amplitude function (overrides ``mode``).
        scale_mode: ``"cycle"`` or ``"iterations"``: what ``scale_fn`` is a function of.
        cycle_momentum: also cycle momentum / beta1.
        base_momentum: lower momentum bound (or one per group).
        max_momentum: upper momentum bound (or one per group).
        last_epoch: index of the last batch (-1: fresh).
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"CyclicLR: {type(optimizer).__name__} is not an Optimizer")
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode is invalid and scale_fn is None (mode={mode!r}; expected "
                             "'triangular', 'triangular2' or 'exp_range')")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.optimizer = optimizer
        base_lrs = per_group("CyclicLR", "base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = per_group("CyclicLR", "max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        if up <= 0 or down <= 0:
            raise ValueError(f"CyclicLR: step sizes must be positive, got {step_size_up!r} and {step_size_down!r}")
        self.total_size, self.step_ratio = up + down, up / (up + down)
        self.mode, self.gamma, self.scale_mode = mode, gamma, scale_mode
        self._scale_fn_custom = scale_fn
        self._init_scale_fn()
        self._check_momentum(optimizer, cycle_momentum)
        if cycle_momentum:
            self.base_momentums, self.max_momentums = self._start_momentum(optimizer, base_momentum, max_momentum,
                                                                           last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "exp_range":
            self.scale_mode = "iterations"
        else:
            self.scale_mode = "cycle"

    def scale_fn(self, x) -> float:
        """The amplitude factor at ``x`` (a cycle number or an iteration, as ``scale_mode`` says).

        Args:
            x: the cycle or the iteration.
        """
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "exp_range":
            return self.gamma ** x
        return _triangular(x) if self.mode == "triangular" else _triangular2(x)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (and the momenta, set in the groups)."""
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        amplitude = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * scale * amplitude for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, top - (top - base) * scale * amplitude)
        return lrs

    def state_dict(self):
        """Every attribute except the optimizer; a custom ``scale_fn`` is kept as its ``__dict__`` (or None)."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else dict(fn.__dict__)
        return state

    def load_state_dict(self, state_dict):
        """Restore the attributes (a custom ``scale_fn`` stays the one given to the constructor).

        Args:
            state_dict: the dict from ``state_dict()``.
        """
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom", None)
        super().load_state_dict(state)
        if fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing from the base lr to ``eta_min`` over ``T_i`` epochs, restarting; ``T_i *= T_mult``.

    ``step(epoch)`` takes fractional epochs (``epoch + batch / batches``), as PyTorch's.

    Args:
        optimizer: the Optimizer.
        T_0: epochs until the first restart.
        T_mult: factor by which the period grows after each restart (an int >= 1).
        eta_min: minimum learning rate.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):  # noqa: N803 - PyTorch's names
        if isinstance(T_0, bool) or not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: Expected positive integer T_0, but got {T_0!r}")
        if isinstance(T_mult, bool) or not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: Expected integer T_mult >= 1, but got {T_mult!r}")
        if isinstance(eta_min, bool) or not isinstance(eta_min, (float, int)):
            raise ValueError(f"CosineAnnealingWarmRestarts: Expected float or int eta_min, but got {eta_min!r} of "
                             f"type {type(eta_min).__name__}")
        self.T_0, self.T_i, self.T_mult, self.eta_min, self.T_cur = T_0, T_0, T_mult, eta_min, last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates at ``T_cur`` epochs into the current period ``T_i``."""
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or jump to ``epoch`` (a float is a fraction of the way through an epoch).

        Args:
            epoch: the epoch to go to (default: the next one).
        """
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur, self.T_i = self.T_cur % self.T_i, self.T_i * self.T_mult
        else:
            self._jump(epoch)
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _jump(self, epoch) -> None:
        """Set ``T_cur`` and ``T_i`` for an absolute (possibly fractional) epoch."""
        if epoch < 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: Expected non-negative epoch, but got {epoch}")
        if epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n
