"""``cupynet.amp.trace()``: record which dtype every op ran in, and why.

For learners ("what does autocast actually do to my model?") and for debugging
("why is this op in fp32?"). While the context is open, the dispatcher
(``cupynet.amp.policy.apply_cast_policy``) calls ``record`` for every op this
thread runs: forward ops, and also backward ops when ``backward()`` is called
inside the context (those show "autocast off": backward never re-decides).

    with cupynet.amp.autocast("cpu"), cupynet.amp.trace() as t:
        loss = model(x)
    print(t)              # one row per op: op, input dtypes, ran in, reason
    print(t.summary())    # ops counted by the dtype they ran in
"""

from __future__ import annotations

from collections import namedtuple

from ..autograd.state import STATE

__all__ = ["trace", "TraceRow", "TraceSummary"]

TraceRow = namedtuple("TraceRow", ["op", "input_dtypes", "ran_in", "reason"])
TraceRow.__doc__ = "One dispatched op: its name, its input dtypes, the dtype it ran in and why."

_HEADERS = ("#", "op", "inputs", "ran in", "reason")


class TraceSummary(dict):
    """Op counts keyed by the dtype the ops ran in (a dict; ``str()`` is a small table).

    Args:
        counts: mapping dtype name -> number of ops.
    """

    def __str__(self):
        if not self:
            return "no ops recorded"
        width = max(len(k) for k in self)
        total = sum(self.values())
        lines = [f"{k:<{width}}  {v:>6}  {100.0 * v / total:5.1f}%" for k, v in self.items()]
        return "\n".join(lines + [f"{'total':<{width}}  {total:>6}"])


class trace:  # noqa: N801 - a context manager named like autocast
    """Context manager recording, for each op dispatched in this thread, the dtype it ran in and why."""

    def __init__(self):
        self.rows = []
        self._active = False

    def __enter__(self):
        if self._active:
            raise RuntimeError("trace: this trace is already recording; use a new trace() object to nest")
        self._active = True
        # NOTE: a new list (not append) so an op iterating the old list is never disturbed
        STATE.tracers = STATE.tracers + [self]
        return self

    def __exit__(self, exc_type, exc, tb):
        STATE.tracers = [t for t in STATE.tracers if t is not self]
        self._active = False
        return False

    def record(self, op_name, in_dtypes, run_dtype, reason):
        """Append one row (called by the dispatcher, not by users).

        Args:
            op_name: the op's public name.
            in_dtypes: the dtypes of its tensor inputs, as strings, before any cast.
            run_dtype: the dtype it computed in after the policy's casts.
            reason: why (policy and target, promotion, not eligible, autocast off).
        """
        self.rows.append(TraceRow(str(op_name), tuple(str(d) for d in in_dtypes), str(run_dtype), str(reason)))

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def ops(self, name=None):
        """The rows, or only those of op ``name``.

        Args:
            name: an op name such as ``"matmul"``, or None for all rows.
        """
        return [r for r in self.rows if name is None or r.op == name]

    def summary(self) -> TraceSummary:
        """Number of ops per dtype they ran in, most frequent first (ties by name)."""
        counts = {}
        for row in self.rows:
            counts[row.ran_in] = counts.get(row.ran_in, 0) + 1
        return TraceSummary(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def table(self) -> str:
        """The rows as an aligned text table (what ``print(trace)`` shows)."""
        body = [(str(i), r.op, ", ".join(r.input_dtypes) or "-", r.ran_in, r.reason)
                for i, r in enumerate(self.rows)]
        widths = [max(len(cells[c]) for cells in [_HEADERS, *body]) for c in range(len(_HEADERS))]
        fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
        rule = "  ".join("-" * w for w in widths)
        return "\n".join([fmt(_HEADERS), rule, *(fmt(cells) for cells in body)])

    __str__ = table

    def __repr__(self):
        return f"<cupynet.amp.trace: {len(self.rows)} ops>"
