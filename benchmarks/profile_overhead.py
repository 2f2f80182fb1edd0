"""Where the host time of a small op goes: a cProfile of the per-op chain (bench_overhead.py's), forward and backward.

Run: PYTHONPATH=. python benchmarks/profile_overhead.py [--steps 3000] [--top 25]

Prints the functions with the most time of their own (tottime), then the share of the whole spent under
``Function.apply`` (the forward dispatcher: autocast policy, grad-mode and version bookkeeping, the node),
under the backward engine, inside the ops' own ``forward``/``backward`` and in NumPy. cProfile adds a fixed
cost per Python call, so the shares overstate code made of many small calls: read them as where the calls
are, and confirm any change with the paired timings of bench_overhead.py.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("CUPYNET_DEVICE", "cpu")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402

from bench_overhead import chain_cupynet  # noqa: E402

PHASES = {
    "Function.apply (forward dispatch, node)": ("autograd/function.py", "apply"),
    "backward engine (_run)": ("autograd/engine.py", "_run"),
    "the ops' forward": ("ops/arith.py", "forward"),
    "the ops' backward": ("ops/arith.py", "backward"),
}


def _cumulative(stats, path, name):
    return sum(entry[3] for (file, _, func), entry in stats.stats.items() if file.endswith(path) and func == name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="chain runs profiled (after 200 warm-up runs)")
    parser.add_argument("--top", type=int, default=25, help="functions listed")
    args = parser.parse_args()
    run = chain_cupynet()
    for _ in range(200):
        run()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.steps):
        run()
    profile.disable()
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    stats.sort_stats("tottime").print_stats(args.top)
    print(text.getvalue())
    total = stats.total_tt
    print(f"per chain run (20 ops forward + backward, profiled): {total / args.steps * 1e6:.1f} us")
    for label, (path, name) in PHASES.items():
        print(f"{label:45s} {100 * _cumulative(stats, path, name) / total:5.1f}% (cumulative)")


if __name__ == "__main__":
    main()
