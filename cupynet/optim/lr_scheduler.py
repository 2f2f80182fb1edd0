"""Learning-rate schedulers with ``torch.optim.lr_scheduler``'s recursive (and closed) forms.

A scheduler changes ``group["lr"]`` of its optimizer's param groups; call
``scheduler.step()`` after ``optimizer.step()``. ``state_dict()`` holds every
attribute except the optimizer (LambdaLR also leaves out its lambdas, as
PyTorch does), so a loaded scheduler continues the very same sequence.
"""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter

from cupynet.checks import positive_int
from cupynet.optim.lr_base import LRScheduler
from cupynet.optim.lr_cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from cupynet.optim.lr_plateau import ReduceLROnPlateau

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
           "OneCycleLR", "LambdaLR", "MultiplicativeLR", "SequentialLR", "ChainedScheduler", "ConstantLR",
           "PolynomialLR", "CyclicLR", "CosineAnnealingWarmRestarts", "ReduceLROnPlateau"]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs.

    Args:
        optimizer: the Optimizer.
        step_size: period of the decay, in epochs.
        gamma: multiplicative factor.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = positive_int("StepLR", "step_size", step_size)
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
        self.T_max = positive_int("CosineAnnealingLR", "T_max", T_max)
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
        self.total_iters = positive_int("LinearLR", "total_iters", total_iters)
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


class _Lambdas(LRScheduler):
    """What LambdaLR and MultiplicativeLR share: one callable per param group, kept out of the state dict."""

    def _set_lambdas(self, optimizer, lr_lambda) -> None:
        name = type(self).__name__
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"{name}: Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"{name}: lr_lambda must be callable, got {type(fn).__name__}")

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


class LambdaLR(_Lambdas):
    """Set the lr to ``base_lr * lr_lambda(epoch)``.

    Args:
        optimizer: the Optimizer.
        lr_lambda: a function of the epoch, or a list of them (one per param group).
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self._set_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_Lambdas):
    """Multiply the lr by ``lr_lambda(epoch)`` every epoch (after the first).

    Args:
        optimizer: the Optimizer.
        lr_lambda: a function of the epoch giving the factor, or a list of them (one per param group).
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self._set_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        if self._is_initial:
            return self._group_lrs()
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, self._group_lrs())]


class ConstantLR(LRScheduler):
    """Multiply the lr by ``factor`` until epoch ``total_iters``, then give the base lr back.

    Args:
        optimizer: the Optimizer.
        factor: the factor, in [0, 1].
        total_iters: the epoch at which the factor is lifted.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError(f"ConstantLR: Constant multiplicative factor expected to be between 0 and 1, got "
                             f"{factor!r}")
        self.factor = factor
        self.total_iters = positive_int("ConstantLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr as ``(1 - epoch / total_iters) ** power`` down to 0 at ``total_iters``.

    Args:
        optimizer: the Optimizer.
        total_iters: epochs of the decay.
        power: the polynomial's power.
        last_epoch: index of the last epoch (-1: fresh).
    """

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = positive_int("PolynomialLR", "total_iters", total_iters)
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The learning rates for ``last_epoch`` (PyTorch's recursive form)."""
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        t, n = self.last_epoch, self.total_iters
        factor = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * factor for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base in self.base_lrs]


class _Composite(LRScheduler):
    """What SequentialLR and ChainedScheduler share: a state dict that nests each inner scheduler's."""

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
        state = dict(state_dict) if isinstance(state_dict, dict) else {}
        inner = state.pop("_schedulers", None)
        if inner is None or len(inner) != len(self._schedulers):
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected {len(self._schedulers)} inner "
                             f"scheduler states under '_schedulers', got {None if inner is None else len(inner)}")
        self.__dict__.update(state)  # NOTE: ChainedScheduler has no last_epoch of its own, as in PyTorch
        for scheduler, saved in zip(self._schedulers, inner):
            scheduler.load_state_dict(saved)


class SequentialLR(_Composite):
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



class ChainedScheduler(_Composite):
    """Step several schedulers together each epoch (their factors compose).

    Args:
        schedulers: the schedulers (all of one optimizer; not ReduceLROnPlateau).
        optimizer: the Optimizer (default: the first scheduler's).
    """

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for i, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError("ChainedScheduler does not support `ReduceLROnPlateau` scheduler as it requires "
                                 f"additional kwargs to be specified when calling `step`, but got one at index {i}")
            if getattr(scheduler, "optimizer", None) is not optimizer:
                raise ValueError(f"ChainedScheduler expects all schedulers to belong to the same optimizer, but got "
                                 f"scheduler {type(scheduler).__name__} at index {i} with another optimizer")
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self):
        """Step every scheduler, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]
