"""The per-epoch progress of ``cupynet train``: a tqdm bar on a terminal, plain log lines elsewhere.

NOTE: tqdm redraws its bar with carriage returns; in a file or a pipe (a CI log, ``| tee``) every redraw
stays in the output as a frame. So the bar is used only when stderr is a terminal; otherwise a plain
line (no ``\\r``) is printed every ``PLAIN_INTERVAL`` seconds, and the epoch summaries on stdout do the rest.
"""

from __future__ import annotations

import sys
import time

__all__ = ["EpochBar", "PLAIN_INTERVAL"]

PLAIN_INTERVAL = 10.0


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class EpochBar:
    """Progress of one epoch: loss, accuracy, samples/s (and loss scale / skipped steps with AMP).

    Args:
        epoch: the epoch index (0-based).
        epochs: how many epochs in all.
        total: steps in this epoch.
        enabled: show progress at all.
        start: the step the epoch resumes at (a resumed run starts where it left off).
        interval: seconds between refreshes of the bar (plain lines: ``PLAIN_INTERVAL``).
        stream: where progress goes (default: sys.stderr); a bar only when it is a terminal.
    """

    def __init__(self, epoch, epochs, total, enabled=True, start=0, interval=0.5, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.desc, self.total = f"epoch {epoch + 1}/{epochs}", total
        self.last, self.interval = time.monotonic(), interval
        self.bar, self.plain = None, False
        if enabled and _is_terminal(self.stream):
            from tqdm import tqdm
            self.last = 0.0
            self.bar = tqdm(total=total, initial=start, desc=self.desc, unit="step", leave=False, file=self.stream,
                            dynamic_ncols=True)
        elif enabled:
            self.plain, self.interval = True, PLAIN_INTERVAL

    def wants_refresh(self) -> bool:
        """True when enough time passed since the last refresh (so the loop reads losses only then)."""
        return (self.bar is not None or self.plain) and time.monotonic() - self.last >= self.interval

    def update_to(self, position, loss, acc, rate, **extra):
        """Move the bar to ``position`` and show the latest numbers (a plain line when due, without a bar).

        Args:
            position: steps done in this epoch.
            loss: the latest loss.
            acc: running training accuracy in percent.
            rate: samples per second.
            **extra: more fields (scale, skipped).
        """
        due = time.monotonic() - self.last >= self.interval
        if self.bar is not None:
            self.last = time.monotonic()
            self.bar.n = position
            self.bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.1f}%", samples_s=f"{rate:.0f}", **extra,
                                 refresh=True)
        elif self.plain and due and position < self.total:
            self.last = time.monotonic()
            fields = "".join(f", {key} {value}" for key, value in extra.items())
            print(f"{self.desc} step {position}/{self.total}: loss {loss:.4f}, acc {acc:.1f}%, {rate:.0f} samples/s"
                  f"{fields}", file=self.stream, flush=True)

    def write(self, message):
        """Print a line above the bar (or to the stream when there is no bar).

        Args:
            message: the line.
        """
        if self.bar is not None:
            self.bar.write(message, file=self.stream)
        else:
            print(message, file=self.stream, flush=True)

    def close(self):
        """Remove the bar (the epoch's summary line follows)."""
        if self.bar is not None:
            self.bar.close()
