"""``TrainConfig``: every setting of a ``cupynet train`` run, and the checks that refuse a bad one before it starts.

``validate()`` runs before anything is loaded or printed: a bad value, a flag that has no effect without
another, or an output path that cannot be written is one ``ValueError`` naming the flag, the value and what
was expected, and nothing has been changed.
"""

from __future__ import annotations

import dataclasses
import math

from .paths import check_output_directory, check_output_file

__all__ = ["TrainConfig", "BEST_IS_HIGHER", "SCHEDULES", "MAX_THREADS", "DEFAULT_INIT_SCALE"]

# NOTE: True where a larger value is better
BEST_IS_HIGHER = {"val_acc": True, "val_loss": False}
SCHEDULES = ("constant", "cosine", "step", "plateau")
# NOTE: a bound well above any machine's cores that still fits every BLAS library's C int
MAX_THREADS = 1024
DEFAULT_INIT_SCALE = 2.0 ** 16
MODELS = ("mlp", "cnn", "transformer")
OPTIMIZERS = ("sgd", "adam", "adamw")


@dataclasses.dataclass
class TrainConfig:
    """Everything ``cupynet train`` needs; built from the command line or by hand.

    Args:
        model: "mlp", "cnn" or "transformer".
        dataset: "digits", "mnist:DIR", "fashion-mnist:DIR" or "cifar10:DIR".
        epochs: passes over the training set.
        batch_size: samples per step (per process under ``--nproc``).
        lr: learning rate, finite and > 0 (None: 1e-3 for adam/adamw, 0.05 for sgd).
        optimizer: "sgd", "adam" or "adamw".
        device: "cpu", "cuda" or None for the default device.
        seed: seed of init, dropout and shuffling.
        metrics: path of the JSON-lines metrics file, or None.
        out: output directory (checkpoints, plots), or None.
        amp: use autocast and a GradScaler.
        amp_dtype: "float16"/"bfloat16" or None for autocast's default (needs ``amp``).
        init_scale: the GradScaler's initial scale (needs ``amp``; None: 65536).
        save_every: checkpoint every N steps (needs out).
        resume: a checkpoint path, "auto", or None.
        keep: how many checkpoints to keep.
        progress: show the progress bar.
        max_steps: stop once the global step (counted across resumes) reaches this, as Ctrl-C does:
            a checkpoint is saved (with save_every) and ``resume`` continues later; None: no limit.
        val_split: fraction of the training set held out for validation every epoch (drawn from ``seed``);
            0 disables validation (and best.ckpt).
        best_metric: "val_acc" or "val_loss": what ``best.ckpt`` (and ``patience``) go by.
        threads: BLAS threads, 1 to ``MAX_THREADS`` (None: one for small models on the CPU, else the default).
        patience: stop when ``best_metric`` has not improved for this many epochs (None: never).
        schedule: "constant", "cosine", "step" or "plateau" (cupynet/train/schedule.py).
        warmup_steps: optimizer steps of linear warmup before the schedule (0: none).
        clip_grad_norm: clip the gradients' global 2-norm to this (unscaled first under AMP); None: no clipping.
        accumulate: batches whose gradients are summed before one optimizer step (1: none).
        tensorboard: a directory for TensorBoard event files, or None.
        test_on: "best" (best.ckpt's weights, when there is a best epoch) or "final": the weights the test
            accuracy is measured on.
    """

    model: str = "mlp"
    dataset: str = "digits"
    epochs: int = 20
    batch_size: int = 64
    lr: float | None = None
    optimizer: str = "adam"
    device: str | None = None
    seed: int = 0
    metrics: str | None = None
    out: str | None = None
    amp: bool = False
    amp_dtype: str | None = None
    init_scale: float | None = None
    save_every: int | None = None
    resume: str | None = None
    keep: int = 3
    progress: bool = True
    max_steps: int | None = None
    val_split: float = 0.1
    best_metric: str = "val_acc"
    threads: int | None = None
    patience: int | None = None
    schedule: str = "constant"
    warmup_steps: int = 0
    clip_grad_norm: float | None = None
    accumulate: int = 1
    tensorboard: str | None = None
    test_on: str = "final"

    @classmethod
    def from_args(cls, args):
        """Build from parsed ``cupynet train`` arguments.

        Args:
            args: the argparse namespace.
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in vars(args).items() if k in fields}
        values["progress"] = not args.no_progress
        return cls(**values)

    @property
    def initial_scale(self) -> float:
        """The GradScaler's initial scale: ``init_scale`` or the default 65536."""
        return DEFAULT_INIT_SCALE if self.init_scale is None else float(self.init_scale)

    def validate(self):
        """Raise ValueError naming the first bad or inconsistent setting; changes nothing."""
        self._check_choices()
        self._check_numbers()
        self._check_dependencies()
        self._check_paths()

    def _check_choices(self):
        for flag, value, allowed in (("--model", self.model, MODELS), ("--optimizer", self.optimizer, OPTIMIZERS),
                                     ("--best-metric", self.best_metric, tuple(BEST_IS_HIGHER)),
                                     ("--schedule", self.schedule, SCHEDULES),
                                     ("--test-on", self.test_on, ("best", "final"))):
            if value not in allowed:
                raise ValueError(f"unknown {flag} {value!r}; expected {', '.join(allowed)}"
                                 f"{suggest(value, allowed)}")

    def _check_numbers(self):
        _count("--epochs", self.epochs)
        _count("--batch-size", self.batch_size)
        _count("--keep", self.keep)
        _count("--accumulate", self.accumulate)
        _count("--warmup-steps", self.warmup_steps, minimum=0)
        _count("--seed", self.seed, minimum=0, maximum=2 ** 63 - 1)
        for flag, value in (("--save-every", self.save_every), ("--max-steps", self.max_steps),
                            ("--patience", self.patience)):
            if value is not None:
                _count(flag, value)
        if self.threads is not None:
            _count("--threads", self.threads, maximum=MAX_THREADS)
        for flag, value in (("--lr", self.lr), ("--init-scale", self.init_scale),
                            ("--clip-grad-norm", self.clip_grad_norm)):
            if value is not None:
                finite_positive(flag, value)

    def _check_dependencies(self):
        if (self.save_every or (self.resume == "auto")) and not self.out:
            raise ValueError("--save-every and --resume auto need --out DIR")
        if not self.amp:
            for flag, value in (("--amp-dtype", self.amp_dtype), ("--init-scale", self.init_scale)):
                if value is not None:
                    raise ValueError(f"{flag} {value} has no effect without --amp (the run would be fp32); "
                                     f"add --amp, or drop {flag}")
        if self.val_split == 0:
            for flag, value in (("--patience", self.patience), ("--schedule", "plateau" if self.schedule ==
                                                                "plateau" else None)):
                if value is not None:
                    raise ValueError(f"{flag} {value} watches the validation set, and --val-split 0 has none; "
                                     "drop --val-split 0")
        if self.test_on == "best" and not self.out:
            raise ValueError("--test-on best reads best.ckpt, which needs --out DIR")
        for flag, value in (("--save-every", self.save_every), ("--max-steps", self.max_steps)):
            if value is not None and self.accumulate > 1 and value % self.accumulate:
                raise ValueError(f"{flag} {value} is not a multiple of --accumulate {self.accumulate}: a run stops "
                                 "and saves only between optimizer steps")

    def _check_paths(self):
        if self.out:
            check_output_directory(self.out, "--out")
        if self.metrics:
            check_output_file(self.metrics, "--metrics", made_by=self.out)
        if self.tensorboard:
            check_output_directory(self.tensorboard, "--tensorboard")

    def identity(self) -> dict:
        """The settings a checkpoint records (``RUN_IDENTITY`` and the rest that describe the run)."""
        keys = ("model", "dataset", "val_split", "seed", "batch_size", "optimizer", "amp", "amp_dtype", "lr",
                "epochs", "best_metric", "schedule", "warmup_steps", "accumulate", "clip_grad_norm")
        found = {key: getattr(self, key) for key in keys}
        found["init_scale"] = self.initial_scale
        return found


def suggest(value, choices) -> str:
    """"; did you mean 'x'?" for the choice closest to ``value`` (difflib), or "" when none is close.

    Args:
        value: what was given.
        choices: the allowed values.
    """
    import difflib
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _count(flag, value, minimum=1, maximum=None):
    """Refuse ``value`` unless it is an int in [minimum, maximum]."""
    bad = isinstance(value, bool) or not isinstance(value, int) or value < minimum
    if bad or (maximum is not None and value > maximum):
        upper = f" to {maximum}" if maximum is not None else " or more"
        raise ValueError(f"{flag} must be an integer {minimum}{upper}, got {value!r}")


def finite_positive(flag, value):
    """Refuse ``value`` unless it is a finite number > 0 (not inf, not nan).

    Args:
        flag: the flag, for the message.
        value: the number.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{flag} must be a finite number > 0, got {value!r}")
