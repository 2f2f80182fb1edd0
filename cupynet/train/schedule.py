"""The learning rate of a ``cupynet train`` run at each optimizer update: ``--schedule`` and ``--warmup-steps``.

``lr(u) = lr0 * warmup(u) * shape(u)`` for the u-th optimizer update (0-based), where ``warmup(u) =
min(1, (u + 1) / W)`` over the first W updates (``--warmup-steps W``; 1 without warmup) and ``shape`` is

- ``constant``: 1;
- ``cosine``: ``(1 + cos(pi * t / T)) / 2`` with ``t = u - W`` and ``T = total - W``: from 1 after the
  warmup down toward 0 at the last update;
- ``step``: 0.1 after half of the updates, 0.01 after three quarters;
- ``plateau``: 0.1 for every time the validation loss has not improved for ``PLATEAU_PATIENCE`` epochs in a
  row (checked at each epoch end, as PyTorch's ReduceLROnPlateau with factor 0.1).

NOTE: the rate is a function of the update count (plus plateau's two numbers, saved in checkpoints), never a
running product, so a resumed run sets exactly the rates the uninterrupted one did.
"""

from __future__ import annotations

import math

__all__ = ["LearningRate", "PLATEAU_PATIENCE", "PLATEAU_FACTOR"]

PLATEAU_PATIENCE = 2
PLATEAU_FACTOR = 0.1


class LearningRate:
    """Learning rate per optimizer update of one run.

    Args:
        base: the --lr (or the optimizer's default).
        schedule: "constant", "cosine", "step" or "plateau".
        warmup_steps: updates of linear warmup (0: none).
        total_updates: optimizer updates in the whole run (all epochs).
    """

    def __init__(self, base, schedule="constant", warmup_steps=0, total_updates=1):
        self.base, self.schedule, self.warmup = float(base), schedule, int(warmup_steps)
        self.total = max(int(total_updates), 1)
        self.plateau_factor, self.plateau_best, self.plateau_bad = 1.0, None, 0

    def at(self, update: int) -> float:
        """The learning rate of update ``update`` (0-based).

        Args:
            update: optimizer updates done before this one.
        """
        warm = min(1.0, (update + 1) / self.warmup) if self.warmup else 1.0
        return self.base * warm * self._shape(update)

    def _shape(self, update):
        if self.schedule == "cosine":
            span = max(self.total - self.warmup, 1)
            t = min(max(update - self.warmup, 0), span)
            return 0.5 * (1.0 + math.cos(math.pi * t / span))
        if self.schedule == "step":
            return PLATEAU_FACTOR ** ((update >= self.total // 2) + (update >= (3 * self.total) // 4))
        if self.schedule == "plateau":
            return self.plateau_factor
        return 1.0

    def end_epoch(self, val_loss) -> bool:
        """Tell plateau the epoch's validation loss; True when it just lowered the rate.

        Args:
            val_loss: the epoch's validation loss (None without validation).
        """
        if self.schedule != "plateau" or val_loss is None or val_loss != val_loss:
            return False
        if self.plateau_best is None or val_loss < self.plateau_best:
            self.plateau_best, self.plateau_bad = float(val_loss), 0
            return False
        self.plateau_bad += 1
        if self.plateau_bad < PLATEAU_PATIENCE:
            return False
        self.plateau_factor *= PLATEAU_FACTOR
        self.plateau_bad = 0
        return True

    def state_dict(self) -> dict:
        """Plateau's state (the other schedules are functions of the update count alone)."""
        return {"factor": self.plateau_factor, "best": self.plateau_best, "bad_epochs": self.plateau_bad}

    def load_state_dict(self, state):
        """Restore ``state_dict()``'s numbers.

        Args:
            state: a dict from ``state_dict`` (or {} for a checkpoint written before schedules existed).
        """
        self.plateau_factor = float(state.get("factor", 1.0))
        best = state.get("best")
        self.plateau_best = None if best is None else float(best)
        self.plateau_bad = int(state.get("bad_epochs", 0))

    def describe(self) -> str:
        """Words for the run header: "cosine to 0 after 50 warmup steps"."""
        words = {"constant": "constant", "cosine": f"cosine to 0 over {self.total} updates",
                 "step": "x0.1 at 50% and 75% of the updates",
                 "plateau": f"x{PLATEAU_FACTOR:g} when val loss stalls {PLATEAU_PATIENCE} epochs"}[self.schedule]
        return words + (f", linear warmup over {self.warmup} updates" if self.warmup else "")
