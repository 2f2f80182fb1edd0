"""``Checkpoint``: save and resume a whole training run, bit for bit.

A checkpoint file (``cupynet.save`` format, data only) holds::

    {"format": "cupynet-run", "step": int, "epoch": int,
     "model": model.state_dict(), "optimizer": ..., "scheduler": ... or None,
     "scaler": scaler.state_dict() or None, "loader": loader.state_dict() or None,
     "rng": cupynet.get_rng_state(), "metrics": {...}, "extra": {...}}

Restoring all of these (the RNG and the data loader's shuffling state
included) makes the resumed run continue exactly as if it had never stopped.
``epoch`` counts completed epochs: a checkpoint taken at the last batch of an
epoch says that epoch is done, as its loader state does (next epoch, batch 0).
``cupynet train`` keeps in ``extra`` what the scaler's PyTorch-shaped state
does not carry, ``{"skipped_steps": int}``, and the run's configuration,
``{"config": {"model": ..., "dataset": ..., "val_split": ..., ...}}``, so that a
resume with other settings is refused with a message naming the flags the
checkpoint was trained with (``RUN_IDENTITY``). Its ``metrics`` hold the loss
history, the per-epoch rows (train/val loss and accuracy), the best epoch so
far and, with AMP, the loss scale per step.
Besides the step files in ``--out/checkpoints``, ``cupynet train --out DIR``
writes ``DIR/last.ckpt`` (at every epoch end and when the run stops) and
``DIR/best.ckpt`` (at the epoch with the best ``--best-metric``), in the same format.
Files are named ``step-00001234.ckpt``; ``latest()`` picks the highest step and
ignores temporary files left by an interrupted save, and ``save()`` removes those
whose writing process is gone (``cupynet._atomic.remove_stale_temp_files``).
"""

from __future__ import annotations

import os
import re

from .._atomic import TEMP_MARKER, remove_stale_temp_files
from ..random import get_rng_state, set_rng_state
from ..serialization import load, save

__all__ = ["Checkpoint", "attach_checkpointing", "RUN_IDENTITY", "describe_config"]

_NAME = re.compile(r"^step-(\d{8,})\.ckpt\Z")
_NAMED = ("best.ckpt", "last.ckpt")

# NOTE: the settings a run cannot change on resume: another model, data, split, batch size, optimizer or
# precision would load a state that does not fit (or silently train something else). Epochs, learning rate,
# --max-steps and output paths may change.
RUN_IDENTITY = ("model", "dataset", "val_split", "seed", "batch_size", "optimizer", "amp", "amp_dtype")


class Checkpoint:
    """Bundle the objects of a run and save/restore them together.

    Args:
        directory: where checkpoint files go.
        model: a Module.
        optimizer: an Optimizer (or None).
        scheduler: an LR scheduler (or None).
        scaler: a GradScaler (or None).
        loader: a DataLoader with state_dict/load_state_dict (or None).
        keep: how many of the newest files to keep (older ones are deleted after a successful save).
    """

    def __init__(self, directory, model, optimizer=None, scheduler=None, scaler=None, loader=None, keep=3):
        if keep < 1:
            raise ValueError(f"Checkpoint: keep must be >= 1, got {keep}")
        self.directory, self.keep = os.fspath(directory), keep
        self.objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "scaler": scaler,
                        "loader": loader}

    def path_for(self, step: int) -> str:
        """The file name used for ``step``.

        Args:
            step: the global step.
        """
        return os.path.join(self.directory, f"step-{step:08d}.ckpt")

    def save(self, step: int, epoch: int = 0, metrics=None, extra=None) -> str:
        """Save everything at ``step``; returns the path. Keeps only the newest ``keep`` files.

        Temp files of checkpoint saves that were killed (their process is gone) are removed first.

        Args:
            step: the global step count.
            epoch: completed epochs.
            metrics: JSON-able metrics so far (e.g. the loss history).
            extra: any other saveable data.
        """
        os.makedirs(self.directory, exist_ok=True)
        # NOTE: each step has its own file name, so the next save never targets a killed save's name:
        # clean every step file's stale temp files here, before writing (they may be filling the disk).
        remove_stale_temp_files(self.directory, lambda target: _NAME.match(target) is not None)
        path = self.path_for(step)
        save(self.state(step, epoch, metrics, extra), path)
        self._prune()
        return path

    def save_as(self, path, step: int, epoch: int = 0, metrics=None, extra=None) -> str:
        """Save everything at ``step`` to ``path`` (e.g. ``best.ckpt``), outside the kept step files.

        Args:
            path: the file to write (atomically).
            step: the global step count.
            epoch: completed epochs.
            metrics: JSON-able metrics so far.
            extra: any other saveable data.
        """
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        target = os.path.basename(path)
        remove_stale_temp_files(folder, lambda name: name == target)
        save(self.state(step, epoch, metrics, extra), path)
        return os.fspath(path)

    def state(self, step: int, epoch: int = 0, metrics=None, extra=None) -> dict:
        """The checkpoint dict of the bundled objects at ``step`` (what ``save`` writes).

        Args:
            step: the global step count.
            epoch: completed epochs.
            metrics: JSON-able metrics so far.
            extra: any other saveable data.
        """
        state = {"format": "cupynet-run", "step": int(step), "epoch": int(epoch), "rng": get_rng_state(),
                 "metrics": metrics or {}, "extra": extra or {}}
        for name, obj in self.objects.items():
            state[name] = obj.state_dict() if obj is not None else None
        return state

    def _prune(self):
        for _, path in self.list()[:-self.keep]:
            os.unlink(path)

    def list(self):
        """(step, path) of the checkpoint files in the directory, oldest first (temp files ignored)."""
        if not os.path.isdir(self.directory):
            return []
        found = []
        for name in os.listdir(self.directory):
            match = _NAME.match(name)
            if match and TEMP_MARKER not in name:
                found.append((int(match.group(1)), os.path.join(self.directory, name)))
        return sorted(found)

    def latest(self):
        """The path of the newest checkpoint, or None."""
        files = self.list()
        return files[-1][1] if files else None

    def restore(self, path=None, map_location=None, check=None) -> dict:
        """Load a checkpoint into the bundled objects; returns the saved dict (step, epoch, metrics, ...).

        All parts are loaded and validated by the objects' own ``load_state_dict`` in order; the file is read
        completely before anything is changed, so a damaged file changes nothing.

        Args:
            path: a checkpoint file, or None for ``latest()``.
            map_location: passed to ``cupynet.load``.
            check: called with the loaded dict before anything is restored; it raises to refuse the file.
        """
        path = path or self.latest()
        if path is None:
            raise FileNotFoundError(f"Checkpoint: no checkpoint files in {self.directory}")
        state = load(path, map_location=map_location)
        if not isinstance(state, dict) or state.get("format") != "cupynet-run":
            raise ValueError(f"Checkpoint: {path} is a cupynet file but not a training-run checkpoint")
        if check is not None:
            check(state)
        for name, obj in self.objects.items():
            if obj is not None and state.get(name) is not None:
                obj.load_state_dict(state[name])
            elif obj is not None and name in ("model", "optimizer", "scaler"):
                raise ValueError(f"Checkpoint: {path} holds no {name} state but this run has a {name}")
        set_rng_state(state["rng"])
        return state


def attach_checkpointing(trainer):
    """Give a ``cupynet train`` Trainer periodic saving (``--save-every``), best/last files and ``--resume``.

    ``--resume auto`` takes the newest step file in ``--out/checkpoints``, else ``--out/last.ckpt``.

    Args:
        trainer: the Trainer.
    """
    cfg = trainer.config
    directory = cfg.out or os.path.dirname(os.path.abspath(cfg.resume))
    ckpt = Checkpoint(os.path.join(directory, "checkpoints") if cfg.out else directory, trainer.model,
                      trainer.optimizer, None, trainer.scaler, trainer.loader, keep=cfg.keep)
    trainer.checkpointer = _Checkpointer(ckpt, cfg.save_every, cfg.out)
    # NOTE: under --nproc every rank resumes from the files, and rank 0 alone writes them: two writers of
    # last.ckpt would leave whichever rank renamed last, with its own shard's numbers
    trainer.checkpointer.writer = getattr(trainer, "rank", 0) == 0
    if cfg.resume:
        path = None if cfg.resume == "auto" else cfg.resume
        if path is None:
            path = ckpt.latest() or trainer.checkpointer.existing("last.ckpt")
        if path is None:
            print(f"resume: no checkpoint in {ckpt.directory} yet; starting from scratch")
            return
        state = ckpt.restore(path, check=lambda state: _check_resumable(state, trainer, path))
        _check_position(state, trainer.steps_per_epoch, path)
        trainer.continue_from(state["step"], state["metrics"].get("history", []),
                              (state.get("extra") or {}).get("skipped_steps", 0), metrics=state["metrics"])
        trainer.checkpointer.last_saved = trainer.step  # NOTE: stopping right away does not rewrite the file
        print(f"resumed from {path} at step {trainer.step} ({trainer.where()})")


def describe_config(config: dict, keys=RUN_IDENTITY) -> str:
    """Command-line flags for a run configuration: ``--model mlp --dataset digits --amp ...``.

    Args:
        config: {setting: value}, as recorded in a checkpoint's ``extra["config"]``.
        keys: the settings to name, in order.
    """
    flags = []
    for key in keys:
        value = config.get(key)
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else f"(no {flag})")
        elif value is not None:
            flags.append(f"{flag} {value}")
    return " ".join(flags)


def _check_resumable(state, trainer, path):
    """Refuse, before anything is restored, a checkpoint this run cannot continue."""
    _check_config(state, trainer.config, path)
    position = int(state["step"]) % trainer.steps_per_epoch
    if position % trainer.accumulate:
        raise ValueError(f"resume: {path} is at batch {position} of an epoch, inside a group of --accumulate "
                         f"{trainer.accumulate} batches; resume it with the --accumulate it was saved with (a "
                         "divisor of the batch position)")


def _check_config(state, config, path):
    """Refuse a checkpoint trained with another model, data set, split, batch size, optimizer or precision.

    Checkpoints written before the configuration was recorded are not checked here (the state dicts still are).
    """
    saved = (state.get("extra") or {}).get("config")
    if not isinstance(saved, dict):
        return
    current = config.identity()
    differ = [key for key in RUN_IDENTITY if key in saved and saved[key] != current[key]]
    if differ:
        raise ValueError(f"resume: {path} was trained with {describe_config(saved)}; this run has "
                         f"{describe_config(current, differ)}. Resume with the checkpoint's flags, or use "
                         "another --out for a new run")


def _check_position(state, steps_per_epoch, path):
    """Refuse a checkpoint whose step disagrees with its data loader's position (another batch size or data set).

    NOTE: the trainer's epoch is ``step // steps_per_epoch``; with this check it is also the loader's epoch, so
    a checkpoint taken at the last batch of an epoch resumes at the first batch of the next one (checkpoints
    written before epochs were derived this way recorded that epoch as unfinished; they resume correctly too).
    """
    loader = state.get("loader")
    if loader is None:
        return
    epochs, batches, step = loader["epoch"], loader["batches_done"], state["step"]
    if step != epochs * steps_per_epoch + batches:
        raise ValueError(f"resume: {path} is at step {step}, but its data loader had done {epochs} epoch(s) and "
                         f"{batches} batch(es), which with {steps_per_epoch} batches per epoch is step "
                         f"{epochs * steps_per_epoch + batches}; was it saved with another --batch-size, --dataset or "
                         "--val-split? (runs from before --val-split existed trained on the whole set: --val-split 0)")


class _Checkpointer:
    """Calls ``Checkpoint.save`` every N steps and at the end of training; writes best/last files in ``out``.

    Args:
        checkpoint: the Checkpoint.
        every: --save-every (None: no step files).
        out: --out (None: no best/last files).
    """

    def __init__(self, checkpoint, every, out=None):
        self.checkpoint, self.every, self.out = checkpoint, every, out
        self.last_saved = self.last_named = None
        self.writer = True  # False on the ranks other than 0 under --nproc: they read checkpoints only
        self.written = {}  # file name -> path, for the run's summary

    def due(self, step) -> bool:
        return bool(self.every) and step % self.every == 0

    def existing(self, name):
        """The path of ``name`` (best.ckpt, last.ckpt) in ``out`` if that file exists, else None."""
        path = os.path.join(self.out, name) if self.out else None
        return path if path and os.path.isfile(path) else None

    def save_now(self, trainer):
        if self.every is None or self.last_saved == trainer.step or not self.writer:
            return
        metrics, extra = trainer.checkpoint_payload()
        self.written["steps"] = self.checkpoint.save(trainer.step, trainer.epoch, metrics=metrics, extra=extra)
        self.last_saved = trainer.step

    def save_named(self, trainer, name):
        """Write ``out/name`` (best.ckpt or last.ckpt) with the run's state now; nothing without ``out``.

        Args:
            trainer: the Trainer.
            name: one of best.ckpt, last.ckpt.
        """
        if not self.out or not self.writer:
            return
        assert name in _NAMED, name
        metrics, extra = trainer.checkpoint_payload()
        self.written[name] = self.checkpoint.save_as(os.path.join(self.out, name), trainer.step, trainer.epoch,
                                                     metrics=metrics, extra=extra)
        if name == "last.ckpt":
            self.last_named = trainer.step
