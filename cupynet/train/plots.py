"""The pictures of a ``cupynet train`` run, written to ``--out`` when matplotlib is installed.

- ``curves.png``: training loss per step (faint) and train/val loss per epoch; train/val accuracy per epoch.
- ``amp.png`` (AMP runs): the loss scale over the steps, skipped steps marked, and the layers that overflowed
  most: per layer, the number of overflowing (skipped) steps whose gradient had inf/NaN in that layer. The
  GradScaler counts them on the device at every step (``GradScaler.overflow_steps``), read once when the plot
  is drawn, so every skipped step counts, however many fall between two progress refreshes; the counts cover
  this process, not the part of a run before a resume.
"""

from __future__ import annotations

import os

__all__ = ["write_plots", "PlotResult"]


class PlotResult:
    """What ``write_plots`` did: the files it wrote, or why it wrote none.

    Args:
        files: paths written.
        skipped: the reason no plot was written, or None.
    """

    def __init__(self, files=(), skipped=None):
        self.files, self.skipped = list(files), skipped


def _pyplot():
    """matplotlib.pyplot on the file-only Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def write_plots(trainer) -> PlotResult:
    """Write the run's plots into ``trainer.config.out``.

    Args:
        trainer: a Trainer after ``fit`` trained (its history, epoch rows and AMP history).
    """
    out_dir = trainer.config.out
    if not out_dir:
        return PlotResult(skipped="no --out directory")
    if getattr(trainer, "rank", 0) != 0:
        return PlotResult(skipped="rank 0 writes the plots")
    if not trainer.history:
        return PlotResult(skipped="nothing was trained")
    plt = _pyplot()
    if plt is None:
        return PlotResult(skipped="matplotlib is not installed (pip install matplotlib, or the examples extra)")
    os.makedirs(out_dir, exist_ok=True)
    files = [_curves(plt, trainer, os.path.join(out_dir, "curves.png"))]
    if trainer.amp_history:
        files.append(_amp(plt, trainer, os.path.join(out_dir, "amp.png")))
    return PlotResult(files)


def run_title(trainer) -> str:
    """What a figure shows: "mlp on digits, fp32 -- runs/first" (model, data set, precision, run directory).

    Args:
        trainer: the Trainer.
    """
    cfg = trainer.config
    precision = f"AMP {cfg.amp_dtype or 'default dtype'}" if cfg.amp else "fp32"
    return f"{cfg.model} on {cfg.dataset}, {precision}, {cfg.optimizer} -- {os.path.abspath(cfg.out)}"


def _curves(plt, trainer, path):
    rows, per_epoch = trainer.epoch_rows, trainer.steps_per_epoch
    fig, (loss_ax, acc_ax, lr_ax) = plt.subplots(1, 3, figsize=(14, 3.8))
    fig.suptitle(run_title(trainer), fontsize=9)
    steps, losses = zip(*trainer.history)
    loss_ax.plot([s / per_epoch for s in steps], losses, color="tab:blue", alpha=0.25, linewidth=0.7,
                 label="train (per step)")
    epochs = [r["epoch"] for r in rows]
    for key, label, color in (("train", "train", "tab:blue"), ("val", "validation", "tab:orange")):
        if rows and f"{key}_loss" in rows[0]:
            loss_ax.plot(epochs, [r[f"{key}_loss"] for r in rows], "o-", color=color, markersize=3, label=label)
            acc_ax.plot(epochs, [r[f"{key}_acc"] for r in rows], "o-", color=color, markersize=3, label=label)
    best = trainer.best
    if best:
        metric = trainer.config.best_metric
        ax = acc_ax if metric == "val_acc" else loss_ax
        # NOTE: a marker on the point itself, drawn above the lines and not clipped, so that a best epoch at
        # the axis edge (often the last one) still shows
        ax.plot([best["epoch"]], [best[metric]], marker="*", markersize=13, color="gold", markeredgecolor="black",
                linestyle="none", zorder=5, clip_on=False, label=f"best {metric} (epoch {best['epoch']})")
    loss_ax.set(xlabel="epoch", ylabel="cross-entropy loss", yscale="log", title="loss")
    acc_ax.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy")
    _learning_rate(lr_ax, trainer)
    from matplotlib.ticker import MaxNLocator
    if epochs:
        for ax in (loss_ax, acc_ax):
            ax.set_xlim(min(0.0, epochs[0] - 0.5), epochs[-1] + 0.5)  # NOTE: room around the first and last epoch
    for ax in (loss_ax, acc_ax):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    return _save(plt, fig, path)


def _learning_rate(ax, trainer):
    """The learning rate per step (a step line through the points where it changed)."""
    points = list(trainer.lr_history)
    if points:
        last = trainer.history[-1][0] if trainer.history else points[-1][0]
        steps, rates = zip(*points, (last, points[-1][1]))
        ax.step([s / trainer.steps_per_epoch for s in steps], rates, where="post", color="tab:green", linewidth=1)
    ax.set(xlabel="epoch", ylabel="learning rate", title=f"learning rate ({trainer.config.schedule})")
    ax.grid(alpha=0.3)


def _amp(plt, trainer, path):
    fig, (scale_ax, layer_ax) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 2]})
    fig.suptitle(run_title(trainer), fontsize=9)
    steps, scales, skipped = zip(*trainer.amp_history)
    # NOTE: the scale recorded at a step is the one its update() left (halved at a skipped step), as in --metrics
    scale_ax.step(steps, scales, where="post", color="tab:purple", linewidth=1, label="loss scale after the step")
    # NOTE: a step was skipped when the skip counter rose at it (the counter already counts that step)
    before = 0 if steps[0] == 1 else skipped[0]  # NOTE: a history from step 1 starts from no skips
    marks = [(s, c) for s, c, k, p in zip(steps, scales, skipped, (before, *skipped[:-1])) if k > p]
    if marks:
        scale_ax.plot(*zip(*marks), "x", color="tab:red", label=f"skipped step ({len(marks)})")
    scale_ax.set(xlabel="step", ylabel="loss scale", yscale="log", title="dynamic loss scale")
    scale_ax.grid(alpha=0.3)
    scale_ax.legend(fontsize=8)
    top = sorted(trainer.overflow_steps().items(), key=lambda item: (-item[1], item[0]))[:8]
    if top:
        names, counts = zip(*reversed(top))
        from matplotlib.ticker import MaxNLocator
        layer_ax.barh(names, counts, color="tab:red")
        layer_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        layer_ax.set(xlabel="overflowing steps with inf/NaN in the layer", title="layers that overflowed most")
    else:
        layer_ax.text(0.5, 0.5, "no overflow recorded", ha="center", va="center")
        layer_ax.set(title="layers that overflowed most", xticks=[], yticks=[])
    return _save(plt, fig, path)


def _save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
