"""The ``cupynet`` command: ``train`` (the main job), ``info``, ``bench`` and ``run`` (a PyTorch script).

Errors a user can cause (a bad flag, a missing data directory) print one line
and exit non-zero, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import re
import sys

__all__ = ["main", "build_parser"]

DATASET_HELP = "digits (bundled with scikit-learn), mnist:DIR, fashion-mnist:DIR or cifar10:DIR"


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (no usage dump) and exits with status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}{_did_you_mean(self, message)} (see --help)\n")


def _did_you_mean(parser, message) -> str:
    """"; did you mean 'train'?" for an invalid choice or an unknown flag close to a real one (difflib)."""
    import difflib
    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        close = difflib.get_close_matches(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)), n=1)
        return f"; did you mean {close[0]!r}?" if close else ""
    unknown = re.search(r"unrecognized arguments: (.*)", message)
    if not unknown:
        return ""
    flags = {option for action in _all_actions(parser) for option in action.option_strings}
    for word in unknown.group(1).split():
        close = difflib.get_close_matches(word.split("=")[0], sorted(flags), n=1) if word.startswith("--") else []
        if close:
            return f"; did you mean {close[0]}?"
    return ""


def _all_actions(parser):
    """The actions of ``parser`` and of its subcommands' parsers."""
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from sub._actions


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``cupynet`` command."""
    parser = _OneLineParser(prog="cupynet", description="cupynet: deep learning on CuPy/NumPy with AMP")
    parser.add_argument("--version", action="version", version=f"cupynet {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    _add_train(sub.add_parser("train", help="train a model end to end",
                              description="Train a small network; the defaults train an MLP on digits.",
                              epilog="Ctrl-C or SIGTERM stops after the current step, saves a checkpoint there "
                                     "(with --out) and exits 130 or 143; --resume auto continues it. Every flag: "
                                     "docs/training.md."))
    info = sub.add_parser("info", help="versions, device, GPU and fp16/bf16 support")
    info.add_argument("--json", action="store_true", help="print the report as JSON")
    bench = sub.add_parser("bench", help="time training steps of a model (samples/s)")
    bench.add_argument("--model", default="mlp", choices=["mlp", "cnn", "transformer"], help="model to time")
    bench.add_argument("--batch-size", type=_positive_int, default=256, help="batch size (default 256)")
    bench.add_argument("--steps", type=_positive_int, default=20, help="timed steps (default 20)")
    bench.add_argument("--device", default=None, help="cpu or cuda (default: the default device)")
    bench.add_argument("--amp", action="store_true", help="time with autocast + GradScaler")
    run = sub.add_parser("run", help="run an unmodified PyTorch script on cupynet (torch names map to cupynet's)")
    run.add_argument("script", help="the PyTorch script")
    run.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return parser


def _version() -> str:
    import cupynet
    return cupynet.__version__


def _positive_type(convert, what, maximum=None):
    """An argparse ``type``: ``convert(text)``, refused unless it is finite, > 0 and at most ``maximum``."""

    def parse(text):
        try:
            value = convert(text)
        except (ValueError, OverflowError):
            value = None
        if value is None or not math.isfinite(value) or not value > 0 or (maximum is not None and value > maximum):
            upper = f" (at most {maximum})" if maximum is not None else ""
            raise argparse.ArgumentTypeError(f"expected a positive {what}, got {text!r}{upper}")
        return value

    return parse


def _non_negative_int(text):
    """An argparse ``type``: an integer >= 0 (``--warmup-steps``)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _seed(text):
    """An argparse ``type``: an integer from 0 to 2**63 - 1 (``--seed``; checkpoints record it as an int64)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2 ** 63:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to 2**63 - 1, got {text!r}")
    return value


_positive_int = _positive_type(int, "integer")
_positive_float = _positive_type(float, "finite number")  # NOTE: inf and nan are refused


def _fraction(text):
    """An argparse ``type``: a float in [0, 1) (``--val-split``)."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}")
    return value


def _add_train(p):
    from cupynet.train.config import MAX_THREADS, SCHEDULES
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn", "transformer"],
                   help="network to train (default mlp)")
    p.add_argument("--dataset", default="digits", help=f"data set: {DATASET_HELP} (default digits)")
    p.add_argument("--epochs", type=_positive_int, default=20, help="passes over the training set (default 20)")
    p.add_argument("--batch-size", type=_positive_int, default=64, help="samples per step (default 64)")
    p.add_argument("--lr", type=_positive_float, default=None,
                   help="learning rate (default 1e-3 for adam/adamw, 0.05 for sgd)")
    p.add_argument("--optimizer", default="adam", choices=["sgd", "adam", "adamw"], help="optimizer (default adam)")
    p.add_argument("--device", default=None, choices=["cpu", "cuda"],
                   help="where to train (default: cuda when a GPU is usable, else cpu; or $CUPYNET_DEVICE)")
    p.add_argument("--seed", type=_seed, default=0, help="random seed for init, dropout and shuffling (default 0)")
    p.add_argument("--metrics", default=None, metavar="FILE.jsonl",
                   help="write one JSON line per step: step, epoch, loss, lr, time (s since the start), with --amp "
                        "also scale and skipped steps so far; and one per epoch with split, train_loss, train_acc, "
                        "val_loss, val_acc")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory: last.ckpt, best.ckpt, checkpoints/ (--save-every), curves.png and, "
                        "with --amp, amp.png (plots when matplotlib is installed)")
    p.add_argument("--val-split", type=_fraction, default=0.1, metavar="F",
                   help="fraction of the training set held out (drawn from --seed) and evaluated every epoch; "
                        "0 disables validation (default 0.1)")
    p.add_argument("--best-metric", default="val_acc", choices=["val_acc", "val_loss"],
                   help="what best.ckpt is chosen by (default val_acc)")
    p.add_argument("--threads", type=_positive_type(int, "integer", MAX_THREADS), default=None, metavar="N",
                   help="BLAS threads (default: 1 for small models on the CPU, where more threads only slow small "
                        "matrix products on a busy machine; else the BLAS library's default)")
    p.add_argument("--amp", action="store_true", help="mixed precision: autocast + dynamic loss scaling")
    p.add_argument("--amp-dtype", default=None, choices=["float16", "bfloat16"],
                   help="autocast dtype (default float16 on cuda, bfloat16 on cpu)")
    p.add_argument("--init-scale", type=_positive_float, default=None,
                   help="GradScaler initial loss scale; needs --amp (default 65536)")
    p.add_argument("--save-every", type=_positive_int, default=None, metavar="N",
                   help="save a checkpoint in --out every N steps (and at the end)")
    p.add_argument("--resume", nargs="?", const="auto", default=None, metavar="PATH|auto",
                   help="resume from a checkpoint file, or 'auto' for the latest in --out")
    p.add_argument("--max-steps", type=_positive_int, default=None, metavar="N",
                   help="stop after global step N (counted across resumes), as Ctrl-C would; resume continues")
    p.add_argument("--keep", type=_positive_int, default=3, help="checkpoints to keep in --out (default 3)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress (summary lines only); without a terminal, progress is plain lines every 10 s")
    p.add_argument("--nproc", type=_positive_int, default=1, metavar="N",
                   help="data-parallel training in N processes started through mpiexec (default 1); "
                        "--batch-size is per process")
    p.add_argument("--patience", type=_positive_int, default=None, metavar="N",
                   help="early stopping: stop when --best-metric has not improved for N epochs (needs validation)")
    p.add_argument("--schedule", default="constant", choices=list(SCHEDULES),
                   help="learning-rate schedule: constant, cosine (to 0 at the last step), step (x0.1 at 50%% and "
                        "75%% of the steps) or plateau (x0.1 when val loss stalls 2 epochs) (default constant)")
    p.add_argument("--warmup-steps", type=_non_negative_int, default=0, metavar="N",
                   help="linear learning-rate warmup over the first N optimizer steps (default 0)")
    p.add_argument("--clip-grad-norm", type=_positive_float, default=None, metavar="X",
                   help="clip the gradients' global 2-norm to X (under --amp after unscaling)")
    p.add_argument("--accumulate", type=_positive_int, default=1, metavar="N",
                   help="sum the gradients of N batches before each optimizer step (an N times larger batch)")
    p.add_argument("--tensorboard", default=None, metavar="DIR",
                   help="write TensorBoard event files (loss, lr, accuracy, loss scale) to DIR")
    p.add_argument("--test-on", default="final", choices=["best", "final"],
                   help="weights the test accuracy is measured on: best (best.ckpt, needs --out) or final "
                        "(default final)")


def _info() -> dict:
    import ml_dtypes
    import numpy

    import cupynet
    from cupynet import backend
    report = {"cupynet": cupynet.__version__, "python": platform.python_version(), "numpy": numpy.__version__,
              "ml_dtypes": ml_dtypes.__version__}
    if backend.emulating():
        report["cupy"] = f"emulated (cupynet.emulated_cuda, CuPy {backend.cupy_or_none().__version__}'s API)"
    else:
        try:
            import cupy
            report["cupy"] = cupy.__version__
        except Exception as error:  # not installed, or a broken CUDA setup
            report["cupy"] = f"not usable ({type(error).__name__})"
    try:
        report["default_device"] = str(backend.default_device())
    except (RuntimeError, ValueError) as error:
        report["default_device"] = f"error: {error}"
    report["gpu"] = None
    if cupynet.cuda.is_available():
        report["gpu"] = {"name": cupynet.cuda.get_device_name(0),
                         "compute_capability": ".".join(map(str, cupynet.cuda.get_device_capability(0))),
                         "count": cupynet.cuda.device_count()}
    report["fp16_supported"], report["bf16_supported"] = _precision_support()
    from cupynet.cuda.headers import headers_report
    report["kernel_headers"] = headers_report()
    report["host_malloc"] = cupynet.host_memory.state()
    return report


def _precision_support():
    try:
        from cupynet.amp import supports_bf16, supports_fp16
    except ImportError:
        return None, None
    return bool(supports_fp16()), bool(supports_bf16())


def _print_info(as_json):
    report = _info()
    if as_json:
        print(json.dumps(report, indent=2))
        return
    for label, text in _plain_info(report):
        print(f"{label + ':':<16} {text}")


def _plain_info(report) -> list:
    """(label, sentence) pairs of ``cupynet info`` in plain words, from the report that ``--json`` prints.

    NOTE: GPU kernels are reported as what can run here: without a GPU they are not used, whatever the
    headers would allow (the JSON keeps ``kernels_can_compile`` for scripts).
    """
    gpu, headers = report["gpu"], report["kernel_headers"]
    lines = [("cupynet", f"{report['cupynet']} (Python {report['python']}, NumPy {report['numpy']}, "
                         f"ml_dtypes {report['ml_dtypes']})")]
    cupy_status = report["cupy"]
    lines.append(("CuPy", "not installed or not usable: arrays live in NumPy on the CPU"
                  if cupy_status.startswith("not") else cupy_status))
    lines.append(("device", f"{report['default_device']} by default (CUPYNET_DEVICE=cpu|cuda or --device chooses)"))
    if gpu:
        lines.append(("GPU", f"{gpu['name']}, compute capability {gpu['compute_capability']}, {gpu['count']} "
                             "device(s)"))
    else:
        lines.append(("GPU", "none found: everything runs on the CPU"))
    kinds = [name for name, ok in (("float16", report["fp16_supported"]), ("bfloat16", report["bf16_supported"]))
             if ok]
    where = "" if gpu else " (on the CPU through NumPy: correct, but slower than float32)"
    lines.append(("half precision", (" and ".join(kinds) + " work here" + where) if kinds else "not available"))
    if not gpu:
        kernels = "not used: there is no GPU to run them"
    elif headers["kernels_can_compile"]:
        kernels = "compiled on first use (CUDA's fp16/bf16 headers found)"
    else:
        kernels = f"cannot compile: CUDA's fp16/bf16 headers are missing; {headers['fix']}"
    lines.append(("GPU kernels", kernels))
    memory = report["host_malloc"]
    lines.append(("host memory", "freed array memory is kept for reuse (glibc malloc thresholds raised)"
                  if memory["tuned"] else f"the C library's default allocation ({memory['reason']})"))
    return lines


def main(argv=None) -> int:
    """Entry point of the ``cupynet`` command.

    Args:
        argv: the arguments (default: sys.argv[1:]).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["run"]:  # NOTE: the script's own flags (--help too) are its own: argparse never sees them
        from cupynet.compat.run import main as run_main
        return run_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.command == "info":
            _print_info(args.json)
            return 0
        if args.command == "bench":
            from cupynet.train.bench import run_bench
            return run_bench(args)
        if args.nproc > 1:
            from cupynet.train.distributed import relaunch
            return relaunch(sys.argv[1:] if argv is None else list(argv), args.nproc)
        from cupynet.train.loop import TrainConfig, train
        return train(TrainConfig.from_args(args))
    except (FileNotFoundError, NotADirectoryError, ValueError, RuntimeError, ImportError) as error:
        print(f"cupynet {args.command}: error: {error}", file=sys.stderr)
        return 1
    except MemoryError as error:  # e.g. `bench --batch-size` far beyond this machine's memory
        print(f"cupynet {args.command}: error: out of memory ({error}); try a smaller --batch-size", file=sys.stderr)
        return 1
    except KeyboardInterrupt as interrupt:  # Ctrl-C before training began, or a second signal (train.stopping)
        status = getattr(interrupt, "status", 130)
        print(f"\ncupynet {args.command}: aborted (nothing saved since the last checkpoint)", file=sys.stderr)
        return status
    except BrokenPipeError:  # stdout's reader went away (`cupynet info | head -1`): end quietly
        from cupynet.train.stopping import silence_stdout
        silence_stdout()
        return 141


if __name__ == "__main__":
    sys.exit(main())
