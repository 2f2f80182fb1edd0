"""The per-epoch progress of ``cupynet train``: a tqdm bar on a terminal, plain log lines elsewhere.

NOTE: tqdm redraws its bar with carriage returns; in a file or a pipe (a CI log, ``| tee``) every redraw
stays in the output as a frame. So the bar is used only when stderr is a terminal; otherwise a plain
line (no ``\\r``) is printed every ``PLAIN_INTERVAL`` seconds, and the epoch summaries on stdout do the rest.
"""

from __future__ import annotations

import io
import sys
import time

__all__ = ["EpochBar", "PLAIN_INTERVAL", "fit_fields", "format_duration"]

PLAIN_INTERVAL = 10.0
MIN_BAR = 6  # NOTE: the bar itself keeps at least this many columns; the fields give way first
# NOTE: what a narrow terminal keeps first: the loss, then accuracy, the time left for the whole run, speed,
# the last validation accuracy, the learning rate, the AMP scale and skipped steps, the validation loss
PRIORITY = ("loss", "acc", "eta", "rate", "val_acc", "lr", "scale", "skipped", "val_loss")
_LABELS = {"eta": "ETA", "rate": None, "val_acc": "val", "val_loss": "val loss"}


def fit_fields(fields, width) -> str:
    """The fields that fit in ``width`` columns, by ``PRIORITY``, as "loss 0.51 acc 75.0% ...".

    A field that does not fit is dropped and the lower-priority ones are still tried (a short one may fit).

    Args:
        fields: {name: text}, names from ``PRIORITY`` (others go last).
        width: the columns available.
    """
    order = sorted(fields, key=lambda name: PRIORITY.index(name) if name in PRIORITY else len(PRIORITY))
    text = ""
    for name in order:
        label = _LABELS.get(name, name)
        piece = f"{label} {fields[name]}" if label else str(fields[name])
        candidate = f"{text} {piece}" if text else piece
        if len(candidate) <= width:
            text = candidate
    return text


def format_duration(seconds) -> str:
    """"1:05:09", "3:07" or "0:04" for a number of seconds (rounded up).

    Args:
        seconds: a duration >= 0.
    """
    total = int(-(-max(seconds, 0.0) // 1))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _columns(stream) -> int:
    """The terminal's width for ``stream`` (80 when unknown)."""
    import os
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return 80


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
            # NOTE: a fixed layout whose width cupynet computes (fields dropped by PRIORITY), so that nothing
            # is cut at the terminal's edge
            self.bar = tqdm(total=total, initial=start, desc=self.desc, leave=False, file=self.stream,
                            ncols=_columns(self.stream), bar_format="{desc} {percentage:3.0f}%|{bar}| "
                                                                    "{n_fmt}/{total_fmt}{postfix}")
        elif enabled:
            self.plain, self.interval = True, PLAIN_INTERVAL

    def wants_refresh(self) -> bool:
        """True when enough time passed since the last refresh (so the loop reads losses only then)."""
        return (self.bar is not None or self.plain) and time.monotonic() - self.last >= self.interval

    def update_to(self, position, loss, acc, rate, eta=None, **extra):
        """Move the bar to ``position`` and show the latest numbers (a plain line when due, without a bar).

        Args:
            position: steps done in this epoch.
            loss: the latest loss.
            acc: running training accuracy in percent.
            rate: samples per second.
            eta: seconds left for the whole run (None: unknown).
            **extra: more fields (val_acc, val_loss, lr, scale, skipped).
        """
        due = time.monotonic() - self.last >= self.interval
        if eta is not None:
            extra = {"eta": format_duration(eta), **extra}
        if self.bar is not None:
            self.last = time.monotonic()
            self.bar.n = position
            width = _columns(self.stream)
            self.bar.ncols = width
            fixed = len(self.desc) + len(f" 100%|| {self.total}/{self.total}, ")  # tqdm puts ", " before fields
            fields = {"loss": f"{loss:.4f}", "acc": f"{acc:.1f}%", "rate": f"{rate:.0f}/s", **extra}
            self.bar.set_postfix_str(fit_fields(fields, width - fixed - MIN_BAR - 1), refresh=True)
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
