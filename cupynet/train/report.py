"""The header and the closing summary of a ``cupynet train`` run: what runs where, and where every file went.

The header answers before the first step: which device, model (and its parameter count), data (train / val /
test sizes), precision, optimizer, BLAS threads and output paths. The summary answers after the last one:
best and final metrics, wall time, and the files written (or why a plot was not).
"""

from __future__ import annotations

import os

__all__ = ["header_lines", "summary_lines", "format_epoch"]


def _precision(trainer) -> list:
    cfg = trainer.config
    if not cfg.amp:
        return ["  precision: fp32 (no AMP; --amp for mixed precision)"]
    from cupynet.amp.autocast import default_autocast_dtype
    dtype = cfg.amp_dtype or str(default_autocast_dtype(trainer.device.type))
    lines = [f"  precision: AMP: autocast {dtype} (fp32 master weights) + GradScaler (initial scale "
             f"{cfg.initial_scale:g})"]
    if trainer.device.type == "cpu":
        # NOTE: see docs/training.md for the measured slowdown of the built-in models
        lines.append("  note:      AMP on the CPU is slower than fp32: NumPy has no fast float16/bfloat16 math, "
                     "so products are cast to fp32 and rounded back (docs/training.md)")
    return lines


def _data(trainer) -> str:
    cfg = trainer.config
    sizes = f"{len(trainer.train_set)} train"
    if trainer.val_set is not None:
        sizes += f", {len(trainer.val_set)} val ({cfg.val_split:g} of the training set, --seed {cfg.seed})"
    else:
        sizes += ", no validation (--val-split 0)"
    from .distributed import mpi_world_size
    world = mpi_world_size()
    batch = f"batch {cfg.batch_size}"
    if world > 1:
        batch += f" per process, global batch {world * cfg.batch_size} ({world} processes)"
    return (f"{cfg.dataset}: {sizes}, {len(trainer.test_set)} test; {batch}, "
            f"{trainer.steps_per_epoch} steps/epoch, {cfg.epochs} epochs")


def _outputs(trainer) -> list:
    cfg = trainer.config
    lines = []
    if cfg.out:
        out = os.path.abspath(cfg.out)
        steps = (f"; step checkpoints every {cfg.save_every} steps in {os.path.join(out, 'checkpoints')}"
                 if cfg.save_every else "")
        lines.append(f"  output:    {out} (last.ckpt, best.ckpt, curves.png{', amp.png' if cfg.amp else ''}){steps}")
    else:
        lines.append("  output:    none (--out DIR for checkpoints and plots)")
    lines.append(f"  metrics:   {os.path.abspath(cfg.metrics) if cfg.metrics else 'none (--metrics FILE.jsonl)'}")
    if cfg.tensorboard:
        lines.append(f"  tensorboard: {os.path.abspath(cfg.tensorboard)} (tensorboard --logdir {cfg.tensorboard})")
    return lines


def format_epoch(row) -> str:
    """"train loss 0.1234, train accuracy 97.0%, val loss ..., val accuracy ..." for an epoch row.

    Args:
        row: a dict with train_loss, train_acc and, with validation, val_loss and val_acc.
    """
    text = f"train loss {row['train_loss']:.4f}, train accuracy {row['train_acc']:.1f}%"
    if "val_loss" in row:
        text += f", val loss {row['val_loss']:.4f}, val accuracy {row['val_acc']:.1f}%"
    return text


def header_lines(trainer) -> list:
    """The run header, one string per line.

    Args:
        trainer: the Trainer about to fit.
    """
    cfg = trainer.config
    lr = cfg.lr if cfg.lr is not None else trainer.optimizer.param_groups[0]["lr"]
    return [f"cupynet train: {cfg.model} ({type(trainer.model).__name__}, {trainer.parameters:,} parameters) "
            f"on {_device(trainer.device)}",
            f"  data:      {_data(trainer)}",
            *_precision(trainer),
            f"  optimizer: {cfg.optimizer}, lr {lr:g} ({trainer.schedule.describe()}); seed {cfg.seed}",
            *_gradients(trainer),
            f"  threads:   BLAS {trainer.threads.describe()}",
            *_processes(),
            *_outputs(trainer),
            *model_summary(trainer.model)]


def model_summary(model) -> list:
    """The model's top-level layers, one line each: name, type and parameter count (a small Keras summary).

    Args:
        model: the Module.
    """
    children = list(model.named_children())
    lines = [f"  layers:    {len(children)} at the top level (name, type, parameters)"]
    for name, child in children:
        lines.append(_layer_line(name, child))
        grandchildren = list(child.named_children())
        if type(child).__name__ in ("Sequential", "ModuleList") and grandchildren:
            # NOTE: a container says little by itself; its own layers are shown, indented
            lines += [_layer_line(f"{name}.{inner}", layer, indent=6) for inner, layer in grandchildren]
    return lines


def _layer_line(name, layer, indent=4) -> str:
    count = sum(int(p.numel()) for p in layer.parameters())
    return f"{' ' * indent}{name:<{18 - indent}} {type(layer).__name__:<24} {count:>12,}"


def _gradients(trainer) -> list:
    """A header line for --accumulate and --clip-grad-norm, when either is set."""
    cfg, parts = trainer.config, []
    if cfg.accumulate > 1:
        parts.append(f"accumulated over {cfg.accumulate} batches per update (effective batch "
                     f"{cfg.accumulate * cfg.batch_size})")
    if cfg.clip_grad_norm is not None:
        parts.append(f"clipped to a global norm of {cfg.clip_grad_norm:g}"
                     + (" (after unscaling)" if cfg.amp else ""))
    return [f"  gradients: {'; '.join(parts)}"] if parts else []


def _processes() -> list:
    from .distributed import launch_note
    note = launch_note()
    return [f"  processes: {note}"] if note else []


def _device(device) -> str:
    """``cpu``, or ``cuda:0 (NVIDIA H100 ...)``: the GPU's name, which for the emulated device says so."""
    if device.type != "cuda":
        return str(device)
    from .. import cuda  # noqa: PLC0415 - the device questions, only when training on a GPU

    return f"{device} ({cuda.get_device_name(device.index)})"


def _best(trainer) -> str:
    best, metric = trainer.best, trainer.config.best_metric
    if trainer.val_set is None:
        return "  best:      none (no validation set: --val-split 0)"
    if not best:
        return "  best:      none (no epoch finished)"
    where = ""
    if trainer.checkpointer is not None and "best.ckpt" in trainer.checkpointer.written:
        where = f" -> {trainer.checkpointer.written['best.ckpt']}"
    elif trainer.config.out:
        where = f" -> {os.path.join(trainer.config.out, 'best.ckpt')} (earlier)"
    return (f"  best:      epoch {best['epoch']} by {metric}: val loss {best['val_loss']:.4f}, "
            f"val accuracy {best['val_acc']:.1f}%{where}")


def _final(trainer) -> str:
    if not trainer.epoch_rows:
        return "  final:     no epoch finished"
    row = trainer.epoch_rows[-1]
    line = f"  final:     epoch {row['epoch']}: {format_epoch(row)}"
    if trainer.scaler is not None:
        line += f"; loss scale {trainer.scaler.get_scale():g}, {trainer.skipped_steps()} skipped steps"
    return line


def _files(trainer, plots) -> list:
    cfg = trainer.config
    written = dict(trainer.checkpointer.written) if trainer.checkpointer is not None else {}
    files = [written[name] for name in ("last.ckpt", "best.ckpt") if name in written]
    if "steps" in written:
        files.append(f"{os.path.dirname(written['steps'])}/step-*.ckpt (newest {cfg.keep} kept)")
    files += plots.files
    if cfg.metrics:
        files.append(cfg.metrics)
    if cfg.tensorboard:
        files.append(f"{cfg.tensorboard}/events.out.tfevents.*")
    lines = [f"  files:     {', '.join(files) if files else 'none written (--out DIR, --metrics FILE.jsonl)'}"]
    if plots.skipped and cfg.out:
        lines.append(f"  plots:     not written: {plots.skipped}")
    return lines


def summary_lines(trainer, plots) -> list:
    """The closing summary, one string per line (the test accuracy line follows it).

    Args:
        trainer: the Trainer after training.
        plots: the PlotResult of ``write_plots``.
    """
    minutes, seconds = divmod(trainer.wall_time, 60)
    wall = f"{int(minutes)} min {seconds:.1f} s" if minutes else f"{seconds:.1f} s"
    return [f"summary: {trainer.step} steps, {trainer.epoch} of {trainer.config.epochs} epochs, wall time {wall}",
            _best(trainer), _final(trainer), *_files(trainer, plots)]
