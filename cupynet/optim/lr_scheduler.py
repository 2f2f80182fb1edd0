"""Learning-rate schedulers with ``torch.optim.lr_scheduler``'s recursive (and closed) forms.

A scheduler changes ``group["lr"]`` of its optimizer's param groups; call
``scheduler.step()`` after ``optimizer.step()``. ``state_dict()`` holds every
attribute except the optimizer (LambdaLR also leaves out its lambdas, as
PyTorch does), so a loaded scheduler continues the very same sequence.
"""

from __future__ import annotations

import math
import numbers
import types
from bisect import bisect_right
from collections import Counter

from cupynet.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
           "OneCycleLR", "LambdaLR", "SequentialLR"]


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


def _positive_int(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return int(value)


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs.

    Args:
        optimizer: the Optimizer.
        step_size: period of the decay, in epochs.
        gamma: multiplicative factor.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = _positive_int("StepLR", "step_size", step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch.

    Args:
        optimizer: the Optimizer.
        milestones: epoch indices (a repeated milestone decays twice).
        gamma: multiplicative factor.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch.

    Args:
        optimizer: the Optimizer.
        gamma: multiplicative factor.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base lr to ``eta_min`` over ``T_max`` epochs (SGDR without restarts).

    Args:
        optimizer: the Optimizer.
        T_max: half-period, in epochs.
        eta_min: minimum learning rate.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803 - PyTorch's name
        self.T_max = _positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        t, t_max, eta = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._group_lrs()
        if self._step_count == 1 and t > 0:
            return [eta + (base - eta) * (1 + math.cos(t * math.pi / t_max)) / 2 for base in self.base_lrs]
        if (t - 1 - t_max) % (2 * t_max) == 0:
            return [lr + (base - eta) * (1 - math.cos(math.pi / t_max)) / 2
                    for base, lr in zip(self.base_lrs, self._group_lrs())]
        # NOTE: the recursive form multiplies the previous lr by a ratio of cosines
        return [(1 + math.cos(math.pi * t / t_max)) / (1 + math.cos(math.pi * (t - 1) / t_max)) * (lr - eta) + eta
                for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` epochs.

    Args:
        optimizer: the Optimizer.
        start_factor: factor at epoch 0, in (0, 1].
        end_factor: factor from ``total_iters`` on, in [0, 1].
        total_iters: number of epochs of the ramp.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(f"LinearLR: Starting multiplicative factor expected to be greater than 0 and less or "
                             f"equal to 1, got {start_factor!r}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: Ending multiplicative factor expected to be between 0 and 1, got "
                             f"{end_factor!r}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = _positive_int("LinearLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        span = self.end_factor - self.start_factor
        return [base * (self.start_factor + span * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base in self.base_lrs]


class LambdaLR(LRScheduler):
    """Set the lr to ``base_lr * lr_lambda(epoch)``.

    Args:
        optimizer: the Optimizer.
        lr_lambda: a function of the epoch, or a list of them (one per param group).
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"LambdaLR: Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"LambdaLR: lr_lambda must be callable, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        """Every attribute except the optimizer and the lambdas (a callable object's ``__dict__`` is kept)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        """Restore the attributes (the lambdas stay those given to the constructor).

        Args:
            state_dict: the dict from ``state_dict()``.
        """
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        super().load_state_dict(state)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class SequentialLR(LRScheduler):
    """Run schedulers one after another, switching at the milestone epochs.

    Args:
        optimizer: the Optimizer (the same one every scheduler uses).
        schedulers: the schedulers, in order.
        milestones: the epochs at which the next scheduler takes over (one fewer than schedulers).
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if getattr(scheduler, "optimizer", None) is not optimizer:
                raise ValueError(f"SequentialLR expects all schedulers to belong to the same optimizer, but got "
                                 f"scheduler {type(scheduler).__name__} at index {i} with another optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("SequentialLR: Sequential Schedulers expects number of schedulers provided to be one "
                             f"more than the number of milestone points, but got number of schedulers "
                             f"{len(schedulers)} and the number of milestones to be equal to {len(milestones)}")
        self._schedulers, self._milestones = list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo(self, scheduler):
        """Undo the constructor step each inner scheduler already took (recursively)."""
        if hasattr(scheduler, "_schedulers"):
            for inner in scheduler._schedulers:
                self._undo(inner)
        elif scheduler is not self:
            scheduler.last_epoch -= 1

    def step(self):
        """Advance one epoch with the scheduler in charge (restarted at its milestone)."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        """Own attributes plus each inner scheduler's state dict."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        """Restore own attributes and each inner scheduler.

        Args:
            state_dict: the dict from ``state_dict()``.
        """
        state = dict(state_dict)
        inner = state.pop("_schedulers", None)
        if inner is None or len(inner) != len(self._schedulers):
            raise ValueError(f"SequentialLR.load_state_dict: expected {len(self._schedulers)} inner scheduler "
                             f"states under '_schedulers', got {None if inner is None else len(inner)}")
        super().load_state_dict(state)
        for scheduler, saved in zip(self._schedulers, inner):
            scheduler.load_state_dict(saved)


# ---- OneCycleLR: the 1cycle policy (warm up to max_lr, anneal far below the start), as PyTorch has it ----
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
