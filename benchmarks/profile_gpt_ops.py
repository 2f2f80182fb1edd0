"""Where the primitives-built GPT's step goes, op by op: forward and backward time per op class, in the step.

Run: PYTHONPATH=. python benchmarks/profile_gpt_ops.py [--steps 200]

It wraps ``Function.apply`` (forward) and the backward engine's ``_run_node`` (backward) with a timer and
runs the training step of ``bench_gpt_primitives.py``; each row is one op class, with its calls per step
and its microseconds per step. Times are measured inside the step (cold caches, the interpreter busy with
everything else), which is what a step pays: an op timed alone in a loop runs up to ~2x faster. The
timers add a little to each op; the total step time printed first includes them. Nested ops (an op whose
backward calls another op) count in both rows.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("CUPYNET_DEVICE", "cpu")

import argparse  # noqa: E402
import collections  # noqa: E402
import time  # noqa: E402

import bench_gpt_primitives  # noqa: E402

from cupynet.autograd import engine, function  # noqa: E402


def _timed(forward_s, backward_s, calls):
    """Wrap ``Function.apply`` and ``engine._run_node`` to add each call's time to the per-op counters."""
    apply = function.Function.apply.__func__
    run_node = engine._run_node

    def timed_apply(cls, *args, **kwargs):
        start = time.perf_counter()
        out = apply(cls, *args, **kwargs)
        forward_s[cls.__name__] += time.perf_counter() - start
        calls[cls.__name__] += 1
        return out

    def timed_run_node(run, node):
        start = time.perf_counter()
        run_node(run, node)
        backward_s[node.fn.__name__] += time.perf_counter() - start

    function.Function.apply = classmethod(timed_apply)
    engine._run_node = timed_run_node


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps (after 20 untimed)")
    args = parser.parse_args()
    forward_s, backward_s, calls = collections.defaultdict(float), collections.defaultdict(float), collections.Counter()
    step, _ = bench_gpt_primitives.cupynet_step()
    _timed(forward_s, backward_s, calls)
    for _ in range(20):
        step()
    forward_s.clear(), backward_s.clear(), calls.clear()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    per_step = 1e6 / args.steps
    print(f"step {(time.perf_counter() - start) * per_step:.0f} us (timers included), {args.steps} steps, "
          f"model {bench_gpt_primitives.CONFIG}, batch {bench_gpt_primitives.BATCH}")
    print(f"{'op':<28} {'calls/step':>10} {'forward us':>11} {'backward us':>12}")
    for name in sorted(set(forward_s) | set(backward_s), key=lambda n: -(forward_s[n] + backward_s[n])):
        print(f"{name:<28} {calls[name] / args.steps:>10.1f} {forward_s[name] * per_step:>11.1f} "
              f"{backward_s[name] * per_step:>12.1f}")
    print(f"{'all ops':<28} {sum(calls.values()) / args.steps:>10.1f} {sum(forward_s.values()) * per_step:>11.1f} "
          f"{sum(backward_s.values()) * per_step:>12.1f}")


if __name__ == "__main__":
    main()
