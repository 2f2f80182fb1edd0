"""Last-axis reductions of short rows on NumPy: ``cupynet.ops._rows`` against NumPy's own, speed and accuracy.

Run: PYTHONPATH=. python benchmarks/bench_row_reductions.py

For each row width it prints the median time of NumPy's ``max``/``sum`` along the last axis and of
``_rows.row_max``/``row_sum`` on float32 arrays of 131072 values, and the largest error of each sum
relative to the exact sum (float64) over 200 rows of uniform [0, 1) values (and of the GEMV's sum at every
width, also where ``row_sum`` falls back to NumPy's). The accuracy columns are
what ``_rows.GEMV_ROW_WIDTH`` (the widest row summed as a GEMV) is chosen from. Then the same for
``leading_sum`` (sums down the rows: a bias's gradient) against NumPy's ``sum(axis=0)``, on uniform [0, 1)
values at the benchmarked nets' shapes and one tall array.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _timing import environment, median_time, print_json  # noqa: E402

from cupynet.ops import _rows  # noqa: E402


def _errors(width):
    rows = np.random.default_rng(width).random((200, width)).astype(np.float32)
    exact = rows.astype(np.float64).sum(axis=1, keepdims=True)
    relative = lambda s: float((np.abs(s - exact) / exact).max())  # noqa: E731
    gemv = (rows @ np.ones(width, np.float32))[:, None]  # NOTE: the GEMV's order even past GEMV_ROW_WIDTH
    return relative(rows.sum(axis=1, keepdims=True)), relative(_rows.row_sum(rows)), relative(gemv)


def main():
    print(f"env: {environment()}")
    print(f"{'width':>6} {'max us':>8} {'row_max us':>11} {'sum us':>8} {'row_sum us':>11} "
          f"{'sum rel err':>12} {'row_sum rel err':>16} {'GEMV rel err':>13}")
    for width in (8, 32, 64, 256, 1024, 4096):
        a = np.random.default_rng(0).standard_normal((131072 // width, width)).astype(np.float32)
        calls = (lambda a=a: a.max(axis=-1, keepdims=True), lambda a=a: _rows.row_max(a),
                 lambda a=a: a.sum(axis=-1, keepdims=True), lambda a=a: _rows.row_sum(a))
        times = [median_time(f, repeats=200) * 1e6 for f in calls]
        numpy_err, rows_err, gemv_err = _errors(width)
        print(f"{width:>6} {times[0]:>8.1f} {times[1]:>11.1f} {times[2]:>8.1f} {times[3]:>11.1f} "
              f"{numpy_err:>12.2e} {rows_err:>16.2e} {gemv_err:>13.2e}")
        print_json("row_reductions", {"width": width, "max_us": times[0], "row_max_us": times[1],
                                      "sum_us": times[2], "row_sum_us": times[3],
                                      "sum_rel_err": numpy_err, "row_sum_rel_err": rows_err,
                                      "gemv_rel_err": gemv_err})


def leading_sums():
    """``leading_sum`` (a GEMV down the rows) against NumPy's ``sum(axis=0)``: time and largest relative error."""
    print(f"{'rows, cols':>14} {'sum(axis=0) us':>15} {'leading_sum us':>15} {'sum rel err':>12} "
          f"{'leading_sum rel err':>20}")
    for shape in ((64, 256), (512, 64), (512, 256), (100000, 16)):
        a = np.random.default_rng(1).random(shape).astype(np.float32)
        exact = a.astype(np.float64).sum(axis=0)
        calls = (lambda a=a: np.add.reduce(a, axis=0), lambda a=a: _rows.leading_sum(a, 1))
        times = [median_time(f, repeats=100) * 1e6 for f in calls]
        errors = [float((np.abs(f() - exact) / exact).max()) for f in calls]
        print(f"{str(shape):>14} {times[0]:>15.1f} {times[1]:>15.1f} {errors[0]:>12.2e} {errors[1]:>20.2e}")
        print_json("leading_sum", {"shape": list(shape), "sum_us": times[0], "leading_sum_us": times[1],
                                   "sum_rel_err": errors[0], "leading_sum_rel_err": errors[1]})


if __name__ == "__main__":
    main()
    leading_sums()
