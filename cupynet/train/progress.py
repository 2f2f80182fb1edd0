"""The per-epoch progress bar of ``cupynet train`` (tqdm), refreshed a few times a second."""

from __future__ import annotations

import sys
import time

__all__ = ["EpochBar"]


class EpochBar:
    """A tqdm bar for one epoch showing loss, accuracy, samples/s (and loss scale / skipped steps with AMP).

    Args:
        epoch: the epoch index (0-based).
        epochs: how many epochs in all.
        total: steps in this epoch.
        enabled: show the bar at all.
        start: the step the epoch resumes at (a resumed run starts where it left off).
        interval: seconds between refreshes.
    """

    def __init__(self, epoch, epochs, total, enabled=True, start=0, interval=0.5):
        self.interval, self.last = interval, 0.0
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=start, desc=f"epoch {epoch + 1}/{epochs}", unit="step",
                            leave=False, file=sys.stderr, dynamic_ncols=True)

    def wants_refresh(self) -> bool:
        """True when enough time passed since the last refresh (so the loop reads losses only then)."""
        return self.bar is not None and time.monotonic() - self.last >= self.interval

    def update_to(self, position, loss, acc, rate, **extra):
        """Move the bar to ``position`` and show the latest numbers.

        Args:
            position: steps done in this epoch.
            loss: the latest loss.
            acc: running training accuracy in percent.
            rate: samples per second.
            **extra: more fields (scale, skipped).
        """
        self.last = time.monotonic()
        if self.bar is None:
            return
        self.bar.n = position
        self.bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.1f}%", samples_s=f"{rate:.0f}", **extra, refresh=True)

    def write(self, message):
        """Print a line above the bar (or to stderr when there is no bar).

        Args:
            message: the line.
        """
        if self.bar is not None:
            self.bar.write(message, file=sys.stderr)
        else:
            print(message, file=sys.stderr, flush=True)

    def close(self):
        """Remove the bar (the epoch's summary line follows)."""
        if self.bar is not None:
            self.bar.close()
