"""The training loop behind ``cupynet train``: data, model, optimizer, AMP, progress, metrics, checkpoints.

NOTE (host syncs): the per-step loss stays on the device; losses are gathered
and read in one transfer when the progress bar refreshes, when metrics are
flushed and at the end of an epoch, so the GPU is not stalled every step.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import cupynet as cn
from cupynet import backend

from .config import BEST_IS_HIGHER, TrainConfig
from .data_spec import load_datasets, split_validation
from .distributed import agree_to_stop, data_parallel, rank0_output
from .plots import write_plots
from .progress import EpochBar
from .report import format_epoch, header_lines, summary_lines
from .schedule import LearningRate
from .stopping import EXIT_STATUS, GuardedStream, StopRequest, stop_on_signals
from .threads import BlasThreads

__all__ = ["TrainConfig", "train", "Trainer"]


class Trainer:
    """Holds the model, optimizer, scaler and data of one run; ``fit()`` trains it.

    Args:
        config: a TrainConfig.
    """

    def __init__(self, config: TrainConfig):
        config.validate()
        self.config = config
        self.device = backend.device(config.device) if config.device else backend.default_device()
        cn.manual_seed(config.seed)
        self.train_set, self.test_set, self.input_shape, self.num_classes = load_datasets(config.dataset)
        self.train_set, self.val_set = split_validation(self.train_set, config.val_split, config.seed)
        from cupynet.data import DataLoader
        from cupynet.models import build_model
        self.model = build_model(config.model, self.input_shape, self.num_classes).to(self.device)
        self.parameters = sum(int(p.numel()) for p in self.model.parameters())
        self.threads = BlasThreads(config.threads, self.device.type, self.parameters)
        self.optimizer = _make_optimizer(config, self.model)
        self.loader = DataLoader(self.train_set, batch_size=config.batch_size, shuffle=True, seed=config.seed,
                                 device=self.device)
        self.test_loader = DataLoader(self.test_set, batch_size=512, device=self.device)
        # NOTE: an explicit seed: drawing one from the global generator would change the run's random stream
        self.val_loader = None if self.val_set is None else DataLoader(self.val_set, batch_size=512, seed=0,
                                                                      device=self.device)
        data_parallel(self)  # NOTE: under mpiexec: DDP and this rank's shard (cupynet/train/distributed.py)
        self.steps_per_epoch = len(self.loader)
        if self.steps_per_epoch == 0:
            raise ValueError(f"the training set of {config.dataset!r} is empty")
        if config.accumulate > 1 and self.rank_count() > 1:
            raise ValueError("--accumulate with several processes is not supported yet; use a larger --batch-size "
                             "or --nproc instead")
        self.accumulate = config.accumulate
        self.groups_per_epoch = -(-self.steps_per_epoch // self.accumulate)  # optimizer updates per epoch
        self.schedule = LearningRate(self.optimizer.param_groups[0]["lr"], config.schedule, config.warmup_steps,
                                     config.epochs * self.groups_per_epoch)
        self.scaler = _make_scaler(config, self.device)
        if self.scaler is not None:
            self.scaler.register_model(self.model)  # overflow reports name layers, not param[i]
        self._reported_skips = 0
        self._skips_before = 0     # steps skipped before this process resumed the run
        self.step = 0              # optimizer steps (batches) taken since the run began, across resumes
        self.history = []          # (step, loss) for the loss curve
        self.epoch_rows = []       # one dict per finished epoch: train/val loss and accuracy
        self.best = None           # the epoch row with the best --best-metric so far
        self.amp_history = []      # (step, scale after its update, skipped steps so far), with AMP
        self.lr_history = []       # (step, lr) at the first step and wherever the learning rate changed
        self.epoch_hits = self.epoch_seen = 0  # correct predictions / samples of the epoch so far
        self.checkpointer = None
        self.wall_time = 0.0
        self.stop = StopRequest()
        self._t0 = None
        self._time_before = 0.0    # seconds the run had trained before this process resumed it
        self._save_wanted = False  # a --save-every step passed inside an accumulation group
        self.tensorboard = None

    @property
    def epoch(self) -> int:
        """Completed epochs: ``step // steps_per_epoch``.

        NOTE: derived from the step count rather than kept as a second counter, so it cannot lag the data
        loader: the step that runs an epoch's last batch completes that epoch, for the loader's state and
        for a checkpoint taken right there alike, and a resume from it starts the next epoch.
        """
        return self.step // self.steps_per_epoch

    def where(self) -> str:
        """Where the run stands, for messages: "epoch 2 of 3, batch 1 of 3" or "end of epoch 1 of 3".
        """
        position, epochs = self._position_in_epoch(), self.config.epochs
        if position:
            return f"epoch {self.epoch + 1} of {epochs}, batch {position} of {self.steps_per_epoch}"
        return f"end of epoch {self.epoch} of {epochs}" if self.epoch else f"start of epoch 1 of {epochs}"

    def continue_from(self, step, history, skipped_steps=0, metrics=None):
        """Take up a run at ``step`` after its model, optimizer, scaler, loader and RNG were restored.

        Args:
            step: the global step of the checkpoint.
            history: its (step, loss) pairs.
            skipped_steps: steps the GradScaler had skipped by then (its default state_dict, PyTorch's
                five keys, does not carry that count).
            metrics: the checkpoint's ``metrics`` (epoch rows, best epoch, loss scales, the epoch's hits so far).
        """
        self.step, self.history = int(step), [tuple(p) for p in history]
        metrics = metrics or {}
        self.epoch_rows = [dict(row) for row in metrics.get("epochs", [])]
        self.best = dict(metrics["best"]) if metrics.get("best") else None
        self.amp_history = [tuple(p) for p in metrics.get("amp", [])]
        self.lr_history = [tuple(p) for p in metrics.get("lr", [])]
        self.epoch_hits, self.epoch_seen = (int(v) for v in metrics.get("epoch_so_far", (0, 0)))
        restored = int(self.scaler.skipped_steps()) if self.scaler is not None else 0
        self._skips_before = max(0, int(skipped_steps) - restored)
        self._reported_skips = self.skipped_steps()  # NOTE: old skips were reported by the run that took them
        self.schedule.load_state_dict(metrics.get("lr_schedule") or {})
        self._time_before = float(metrics.get("time", 0.0))  # NOTE: the metrics' `time` continues across resumes

    # ---- one step ------------------------------------------------------------------------------
    def train_step(self, x, y):
        """Forward and backward for one batch; the optimizer update on the last batch of its group.

        With ``--accumulate N`` the batches of an epoch form groups of N (the last group of an epoch may be
        shorter); their gradients add up and one update follows the group. Each batch's loss is weighted by
        its share of the group's samples, so the update uses the mean loss over the group: the large batch's.
        Returns the batch's (unweighted) loss and logits, detached.

        Args:
            x: the input batch.
            y: the int64 labels.
        """
        from cupynet.nn import functional as F
        position = self._position_in_epoch()
        first, last, weight = self._group_role(position, int(y.shape[0]))
        if first:
            self.optimizer.zero_grad(set_to_none=True)
        with self._overflow_is_expected():
            with self._autocast():
                logits = self.net(x)
                loss = F.cross_entropy(logits, y)
            weighted = loss if weight == 1.0 else loss * weight
            if self.scaler is not None:
                self.scaler.scale(weighted).backward()
            else:
                weighted.backward()
            if last:
                self._update()
        return loss.detach(), logits.detach()

    def _overflow_is_expected(self):
        """Under loss scaling, NumPy's overflow/invalid warnings silenced: an inf there is the scaler's signal.

        NOTE: with --amp a too-large loss scale makes fp16 casts and products overflow on purpose; the
        GradScaler finds the inf, skips the step, halves the scale, and the run reports the layers in its own
        "step skipped" line. NumPy would print a RuntimeWarning block for each of those casts (on the CPU);
        fp32 runs keep NumPy's warnings, where an overflow is a real problem.
        """
        import contextlib
        if self.scaler is None:
            return contextlib.nullcontext()
        import numpy
        return numpy.errstate(over="ignore", invalid="ignore")

    def _group_role(self, position, batch):
        """(first of its group, last of its group, weight) of the batch at ``position`` in the epoch."""
        n = self.accumulate
        if n == 1:
            return True, True, 1.0
        start = position - position % n
        end = min(start + n, self.steps_per_epoch)
        size, total = self.config.batch_size, len(self.loader.dataset)
        samples = min(end * size, total) - start * size  # NOTE: the epoch's last batch may be smaller
        return position == start, position + 1 == end, batch / samples

    def _update(self):
        """One optimizer update: the scheduled learning rate, clipping (of unscaled gradients), the step."""
        lr = self.schedule.at(self.updates_done())
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        clip = self.config.clip_grad_norm
        if clip is not None:
            from cupynet.nn.utils import clip_grad_norm_
            if self.scaler is not None:
                # NOTE: as PyTorch's AMP recipe: clip the true gradients, not the scaled ones; a step whose
                # gradients overflowed is still skipped by scaler.step (unscale_ recorded found_inf)
                self.scaler.unscale_(self.optimizer)
            clip_grad_norm_(self.model.parameters(), clip)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()

    def updates_done(self) -> int:
        """Optimizer updates taken before the current batch (batches / --accumulate, by epoch)."""
        epochs, position = divmod(self.step, self.steps_per_epoch)
        return epochs * self.groups_per_epoch + position // self.accumulate

    def rank_count(self) -> int:
        """Processes training this run (1 without MPI)."""
        from .distributed import mpi_world_size
        return mpi_world_size()

    def _autocast(self):
        import contextlib
        if not self.config.amp:
            return contextlib.nullcontext()
        from cupynet.amp import autocast
        return autocast(self.device.type, dtype=self.config.amp_dtype)

    # ---- evaluation ----------------------------------------------------------------------------
    def evaluate(self) -> float:
        """Accuracy on the test set, in percent."""
        return self.measure(self.test_loader)[1]

    def measure(self, loader):
        """(mean cross-entropy loss, accuracy in percent) of the model on ``loader``, in eval mode.

        Args:
            loader: a DataLoader (the validation or the test set).
        """
        from cupynet.nn import functional as F
        self.model.eval()
        loss_sum, correct, total = None, None, 0
        with cn.no_grad(), self._autocast():
            for x, y in loader:
                logits = self.model(x)
                # NOTE: summed in fp32 (cross_entropy runs in fp32 under autocast); one host read at the end
                batch_loss = F.cross_entropy(logits, y, reduction="sum")
                hits = (logits.argmax(dim=1) == y).sum()
                loss_sum = batch_loss if loss_sum is None else loss_sum + batch_loss
                correct = hits if correct is None else correct + hits
                total += int(y.shape[0])
        self.model.train()
        if total == 0:
            return float("nan"), 0.0
        loss_sum, correct = _read_all([loss_sum, correct])
        return float(loss_sum) / total, 100.0 * float(correct) / total

    # ---- the loop ------------------------------------------------------------------------------
    def fit(self, out=None) -> float:
        """Train for the configured epochs: a header, a line per epoch (with validation), a summary, the test accuracy.

        Runs under the BLAS thread setting (``threads``). The test accuracy line is always the last line. A run
        that has nothing left to do (all epochs done, or ``max_steps`` reached) says so after the header,
        trains nothing and writes nothing; it only reports the test accuracy.

        Args:
            out: where summary lines go (default: sys.stdout).
        """
        self.stop = StopRequest()
        # NOTE: a reader that went away (`cupynet train | head -1`) stops the run as a signal does, quietly
        out = GuardedStream(sys.stdout if out is None else out,
                            lambda: self.stop.request("stdout closed", EXIT_STATUS[signal.SIGPIPE]))
        with self.threads, stop_on_signals(self.stop):
            for line in header_lines(self):
                print(line, file=out, flush=True)
            warning = self.threads.oversubscription()
            if warning:
                print(warning, file=sys.stderr, flush=True)
            idle = self._nothing_to_train()
            if idle:
                print(f"nothing to train: {idle}", file=out, flush=True)
                return self._report_accuracy(out)
            self._train(out)
            for line in summary_lines(self, write_plots(self)):
                print(line, file=out, flush=True)
            return self._report_accuracy(out)  # NOTE: the last line, as the README promises

    def _train(self, out):
        cfg, stop = self.config, self.stop
        metrics = _MetricsWriter(cfg.metrics, append=self.step > 0, out=cfg.out)
        if cfg.tensorboard and self.rank == 0:
            from cupynet.utils.tensorboard import SummaryWriter
            self.tensorboard = SummaryWriter(cfg.tensorboard)
        self._t0, self._start_step = time.perf_counter(), self.step
        try:
            # NOTE: agreed here too: a signal that lands between an epoch's last step and the next epoch must
            # stop every rank of --nproc before that epoch, or the others would start it and wait forever
            while self.epoch < cfg.epochs and not agree_to_stop(self, stop.requested):
                self._run_epoch(metrics, stop, out)
            if not stop.requested and self.epoch < cfg.epochs:
                stop.request("another process was stopped")
        finally:
            metrics.close()
            if self.tensorboard is not None:
                self.tensorboard.close()
        if stop.requested and self.epoch < cfg.epochs:  # NOTE: a stop at the very last step finished the run
            saved = "" if self.checkpointer is not None else "; nothing saved (no --out)"
            print(f"stopped at step {self.step} ({self.where()}): {stop.reason}{saved}", file=out, flush=True)
        if self.checkpointer is not None:
            self.checkpointer.save_now(self)
            if self.checkpointer.last_named != self.step:
                self.checkpointer.save_named(self, "last.ckpt")
        self.wall_time = time.perf_counter() - self._t0

    def _nothing_to_train(self):
        """Why a (resumed) run has nothing left to train, or None."""
        cfg = self.config
        if self.epoch == cfg.epochs:
            return f"the run already finished its {cfg.epochs} epochs (step {self.step})"
        if self.epoch > cfg.epochs:
            return f"the run is past --epochs {cfg.epochs} already ({self.epoch} epochs done, step {self.step})"
        if cfg.max_steps is not None and self.step >= cfg.max_steps:
            return f"step {self.step} already reaches max_steps {cfg.max_steps}"
        return self._early_stop_reason()

    def _early_stop_reason(self):
        """Why --patience ends the run now (the best epoch is that many epochs back), or None."""
        patience, best = self.config.patience, self.best
        if patience is None or best is None or self.epoch - best["epoch"] < patience:
            return None
        return (f"early stopping: {self.config.best_metric} has not improved for {self.epoch - best['epoch']} "
                f"epochs (--patience {patience}; best epoch {best['epoch']})")

    def _report_accuracy(self, out):
        """Measure the test set on the weights --test-on names; say which, then the accuracy (the last line)."""
        print(f"test set:  {self._load_test_weights()}", file=out, flush=True)
        accuracy = self.evaluate()
        print(f"test accuracy: {accuracy:.1f}%", file=out, flush=True)
        return accuracy

    def _load_test_weights(self) -> str:
        """Load best.ckpt's weights for --test-on best; returns words naming the weights measured."""
        final = f"final weights (step {self.step})"
        if self.config.test_on != "best":
            return f"{final}; --test-on best for best.ckpt's"
        path = os.path.join(self.config.out, "best.ckpt")
        if self.best is None or not os.path.isfile(path):
            return f"{final}: --test-on best, but no epoch was best yet (no best.ckpt)"
        state = cn.load(path, map_location=str(self.device))
        self.model.load_state_dict(state["model"])
        return f"best.ckpt's weights (epoch {self.best['epoch']}, by {self.config.best_metric}; --test-on best)"

    def _run_epoch(self, metrics, stop, out):
        cfg = self.config
        number = self.epoch + 1  # 1-based, as printed and written to the metrics
        self.model.train()
        bar = EpochBar(self.epoch, cfg.epochs, total=self.steps_per_epoch, enabled=cfg.progress,
                       start=self._position_in_epoch())
        started, pending = time.perf_counter(), []
        # NOTE: a resumed epoch's accuracy counts the hits of the process that began it (saved in the checkpoint)
        tally = _EpochTally(self.epoch_hits, self.epoch_seen)
        # NOTE: the loader itself knows where an interrupted epoch stopped (its state_dict)
        for x, y in self.loader:
            loss, logits = self.train_step(x, y)
            self.step += 1
            tally.add((logits.argmax(dim=1) == y).sum(), int(y.shape[0]))
            pending.append((self.step, loss, self._lr(), self.elapsed(), self._scale_tensor(),
                            self._skipped_tensor()))
            if cfg.max_steps is not None and self.step >= cfg.max_steps:
                stop.request(f"--max-steps {cfg.max_steps}")  # NOTE: the same clean stop as Ctrl-C
            epoch_done = self._position_in_epoch() == 0
            # NOTE: between optimizer updates only (--accumulate): a checkpoint never holds half a group
            between = self._position_in_epoch() % self.accumulate == 0
            self._save_wanted = self._save_wanted or (self.checkpointer is not None
                                                      and self.checkpointer.due(self.step))
            due = between and self._save_wanted
            if bar.wants_refresh() or len(pending) >= 50 or epoch_done or due:
                self._flush(number, pending, metrics, bar, tally, started)  # a saved history is complete
                pending = []
            if epoch_done:
                self._end_epoch(number, metrics)  # NOTE: before a step checkpoint, which then holds the epoch row
            if due:
                self.checkpointer.save_now(self)
                self._save_wanted = False
            if between and agree_to_stop(self, stop.requested):
                stop.request("another process was stopped")  # NOTE: a no-op on the rank that was
                break
        self._flush(number, pending, metrics, bar, tally, started)
        bar.close()
        if self.epoch < number:
            return  # interrupted mid-epoch
        print(self._epoch_line(self.epoch_rows[-1], tally.seen / max(time.perf_counter() - started, 1e-9)),
              file=out, flush=True)

    def _end_epoch(self, number, metrics):
        """Validate, record the epoch's row (metrics file, best epoch) and write last.ckpt / best.ckpt."""
        losses = [loss for step, loss in self.history if step > self.step - self.steps_per_epoch]
        row = {"epoch": number, "step": self.step, "train_loss": sum(losses) / max(len(losses), 1),
               "train_acc": 100.0 * self.epoch_hits / max(self.epoch_seen, 1)}
        if self.val_loader is not None:
            row["val_loss"], row["val_acc"] = self.measure(self.val_loader)
        self.epoch_rows.append(row)
        self.epoch_hits = self.epoch_seen = 0
        metrics.write(split="val" if self.val_loader is not None else "train", **row,
                      time=self.elapsed())
        improved = self._update_best(row)
        self.schedule.end_epoch(row.get("val_loss"))
        self._log_tensorboard(number, row)
        reason = self._early_stop_reason()
        if reason:
            self.stop.request(reason)
        if self.checkpointer is not None:
            self.checkpointer.save_named(self, "last.ckpt")
            if improved:
                self.checkpointer.save_named(self, "best.ckpt")

    def _update_best(self, row) -> bool:
        """Keep ``row`` as the best epoch if its --best-metric beats the best so far (ties keep the earlier)."""
        metric = self.config.best_metric
        value = row.get(metric)
        if value is None or value != value:  # no validation, or a NaN loss
            return False
        if self.best is not None and not self._better(value, self.best[metric]):
            return False
        self.best = dict(row)
        return True

    def _better(self, value, than) -> bool:
        return value > than if BEST_IS_HIGHER[self.config.best_metric] else value < than

    def _epoch_line(self, row, rate) -> str:
        line = f"epoch {row['epoch']}/{self.config.epochs}: {format_epoch(row)}, {rate:.0f} samples/s"
        if self.config.schedule != "constant" or self.config.warmup_steps:
            line += f", lr {self._lr():.3g}"
        if self.scaler is not None:
            line += f", scale {self.scaler.get_scale():g}, skipped steps {self.skipped_steps()}"
        return line

    def checkpoint_payload(self):
        """(metrics, extra) for a checkpoint: histories, epoch rows, best epoch, skip count, the configuration.
        """
        metrics = {"history": [list(h) for h in self.history], "epochs": [dict(r) for r in self.epoch_rows],
                   "best": dict(self.best) if self.best else {}, "amp": [list(p) for p in self.amp_history],
                   "lr": [list(p) for p in self.lr_history],
                   "epoch_so_far": [self.epoch_hits, self.epoch_seen], "time": self.elapsed(),
                   "lr_schedule": self.schedule.state_dict()}
        return metrics, {"skipped_steps": self.skipped_steps(), "config": self.config.identity()}

    def elapsed(self) -> float:
        """Seconds the run has trained, across resumes (the ``time`` of the metrics file)."""
        now = 0.0 if self._t0 is None else time.perf_counter() - self._t0
        return self._time_before + now

    def _position_in_epoch(self) -> int:
        return self.step % self.steps_per_epoch

    def _flush(self, number, pending, metrics, bar, tally, started):
        """Write the pending steps of epoch ``number`` (1-based) to the history, metrics and progress bar."""
        if not pending:
            return
        # NOTE: one transfer per kind of device scalar for all pending steps (losses, scales, skip counts)
        losses = _read_all([p[1] for p in pending])
        scales, skips = _read_all([p[4] for p in pending]), _read_all([p[5] for p in pending])
        if skips is not None:
            skips = skips + self._skips_before
        for i, (step, _, lr, when, _, _) in enumerate(pending):
            self.history.append((step, float(losses[i])))
            if not self.lr_history or self.lr_history[-1][1] != lr:
                self.lr_history.append((step, lr))
            if scales is not None:
                self.amp_history.append((step, float(scales[i]), int(skips[i])))
            metrics.write(step=step, epoch=number, loss=float(losses[i]), lr=lr, time=when,
                          scale=None if scales is None else float(scales[i]),
                          skipped=None if skips is None else int(skips[i]))
            if self.tensorboard is not None:
                self.tensorboard.add_scalar("train/loss", float(losses[i]), step)
                self.tensorboard.add_scalar("train/lr", lr, step)
                if scales is not None:
                    self.tensorboard.add_scalar("amp/loss_scale", float(scales[i]), step)
        self.epoch_hits, self.epoch_seen = tally.read()
        accuracy = 100.0 * self.epoch_hits / max(self.epoch_seen, 1)
        rate = tally.seen / max(time.perf_counter() - started, 1e-9)
        extra = {"lr": f"{lr:.3g}"}
        last = self.epoch_rows[-1] if self.epoch_rows else {}  # the last finished epoch's validation
        if "val_acc" in last:
            extra.update(val_loss=f"{last['val_loss']:.4f}", val_acc=f"{last['val_acc']:.1f}%")
        if scales is not None:
            extra.update(scale=f"{scales[-1]:g}", skipped=int(skips[-1]))
            self._report_overflow(int(skips[-1]), bar)
        position = pending[-1][0] - (number - 1) * self.steps_per_epoch  # the last batch: total, not 0
        bar.update_to(position, loss=float(losses[-1]), acc=accuracy, rate=rate, eta=self._eta(), **extra)

    def _eta(self):
        """Seconds left for the whole run at this process's pace so far (validation included), or None."""
        done = self.step - self._start_step
        if done <= 0:
            return None
        last = self.config.epochs * self.steps_per_epoch
        if self.config.max_steps is not None:
            last = min(last, self.config.max_steps)
        return (time.perf_counter() - self._t0) / done * max(last - self.step, 0)

    def _log_tensorboard(self, number, row):
        """The epoch's row as TensorBoard scalars (x: the step), under epoch/."""
        if self.tensorboard is None:
            return
        for key in ("train_loss", "train_acc", "val_loss", "val_acc"):
            if key in row:
                self.tensorboard.add_scalar(f"epoch/{key}", row[key], self.step)
        self.tensorboard.add_scalar("epoch/number", number, self.step)

    def _report_overflow(self, skipped, bar):
        """Print the layers of the last overflow, once per progress refresh that finds newly skipped steps."""
        if skipped <= self._reported_skips:
            return
        from cupynet.amp.diagnostics import format_overflow
        report = self.scaler.last_overflow()
        bar.write(f"step skipped ({skipped} so far): {format_overflow(report)}")
        self._reported_skips = skipped

    def overflow_steps(self) -> dict:
        """``{layer: steps}``: per parameter, the skipped steps of this process with inf/NaN in its gradient.

        Counted by the GradScaler on the device at every step (``GradScaler.overflow_steps``); one host read,
        made only when called (amp.png calls it once). Empty without AMP.
        """
        return self.scaler.overflow_steps() if self.scaler is not None else {}

    def _lr(self):
        return float(self.optimizer.param_groups[0]["lr"])

    def _scale_tensor(self):
        if self.scaler is None:
            return None
        scale = getattr(self.scaler, "_scale", None)
        # NOTE: a copy: the scaler updates its scale in place, and we read many steps later
        return scale.array.copy() if scale is not None else None

    def _skipped_tensor(self):
        counters = getattr(self.scaler, "_counters", None) if self.scaler is not None else None
        return None if not counters else counters["_skipped_steps"].copy()

    def skipped_steps(self) -> int:
        """Steps the GradScaler skipped since the run began, across resumes (0 without AMP); a host read."""
        return self._skips_before + int(self.scaler.skipped_steps()) if self.scaler is not None else 0


def _read_all(values):
    """Host copies of many device scalars (Tensors or arrays) in one transfer; None if any is missing."""
    if not values or any(v is None for v in values):
        return None
    arrays = [v.array if isinstance(v, cn.Tensor) else v for v in values]
    xp = backend.get_array_module(*arrays)
    return backend.to_numpy(xp.stack([a.reshape(()) for a in arrays])).astype(float)


def _make_optimizer(config, model):
    from cupynet import optim
    lr = config.lr if config.lr is not None else (0.05 if config.optimizer == "sgd" else 1e-3)
    if config.optimizer == "sgd":
        return optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    if config.optimizer == "adamw":
        return optim.AdamW(model.parameters(), lr=lr)
    return optim.Adam(model.parameters(), lr=lr)


def _make_scaler(config, device):
    if not config.amp:
        return None
    from cupynet.amp import GradScaler
    return GradScaler(device.type, init_scale=config.initial_scale)


class _EpochTally:
    """Correct predictions and samples of one epoch: device hits summed, read at flushes only.

    Args:
        hits: hits carried over (a resumed epoch).
        seen: samples carried over.
    """

    def __init__(self, hits=0, seen=0):
        self.carried_hits, self.carried_seen = int(hits), int(seen)
        self.correct, self.seen = None, 0  # this process's part

    def add(self, hits, count):
        self.correct = hits if self.correct is None else self.correct + hits
        self.seen += count

    def read(self):
        """(hits, samples) of the epoch so far; one host read."""
        hits = 0 if self.correct is None else int(self.correct.item())
        return self.carried_hits + hits, self.carried_seen + self.seen


class _MetricsWriter:
    """Appends one JSON object per step (and per epoch) to a file (nothing when no path is given).

    Args:
        path: the --metrics file, or None.
        append: continue the file (a resumed run).
        out: the --out directory: a metrics file inside it may be the first thing written there.
    """

    def __init__(self, path, append=False, out=None):
        self.file = None
        if path:
            parent = os.path.dirname(os.path.abspath(path))
            if out and parent == os.path.abspath(out):
                os.makedirs(parent, exist_ok=True)
            if not os.path.isdir(parent):
                raise FileNotFoundError(f"--metrics {path}: directory {parent} does not exist")
            self.file = open(path, "a" if append else "w", encoding="utf-8")  # noqa: SIM115

    def write(self, **row):
        if self.file is not None:
            self.file.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")

    def close(self):
        if self.file is not None:
            self.file.close()


def train(config: TrainConfig, out=None) -> int:
    """Run ``cupynet train``: build everything from ``config``, resume if asked, fit; returns the exit status.

    Args:
        config: the settings.
        out: where summary lines go (default: sys.stdout).
    """
    trainer = Trainer(config)
    with rank0_output(trainer, out) as out:
        if config.out or config.resume:
            from .checkpoint import attach_checkpointing
            attach_checkpointing(trainer)
        trainer.fit(out)
    return trainer.stop.status

