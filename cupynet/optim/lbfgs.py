"""L-BFGS (``torch.optim.LBFGS``): a quasi-Newton method that re-evaluates the loss through a closure.

One ``step(closure)`` runs up to ``max_iter`` iterations on the flattened
parameters ``x`` with gradient ``g`` (all in the parameters' dtype)::

    first iteration ever:  d = -g;  H = 1
    later:  y = g - g_prev;  s = t * d;  if y.s > 1e-10: remember (y, s, 1 / y.s), keep the last history_size;
            H = y.s / y.y
            two-loop recursion: q = -g; for the pairs newest first: a_i = rho_i s_i.q; q -= a_i y_i
                                r = H q;  for the pairs oldest first: b_i = rho_i y_i.r; r += (a_i - b_i) s_i
            d = r
    t = lr (the very first iteration: min(1, 1 / sum|g|) * lr)
    line_search_fn None:            x = x + t d, then re-evaluate loss and g
    line_search_fn "strong_wolfe":  t from a bracketing line search with cubic interpolation
                                    (sufficient decrease c1 = 1e-4, curvature c2 = 0.9), x = x + t d
    stop at max_iter, max_eval evaluations, max|g| <= tolerance_grad, max|t d| <= tolerance_change,
    or |loss - previous loss| < tolerance_change

NOTE: quantities PyTorch keeps as 0-d tensors (``y.s``, ``rho``, ``H``, the
directional derivatives) are 0-d arrays of the parameters' dtype here and the
ones it keeps as Python floats (the loss, ``t`` after a line search) are
floats, so NumPy's promotion rounds them where PyTorch's does. Like PyTorch,
each iteration reads values on the host (the loss, the stopping tests): L-BFGS
is not an AMP-path optimizer (GradScaler.step refuses closures, as PyTorch's).
"""

from __future__ import annotations

import numbers

from cupynet import backend
from cupynet.autograd import enable_grad, no_grad
from cupynet.checks import positive_int
from cupynet.optim import _common
from cupynet.optim.optimizer import Optimizer
from cupynet.tensor import Tensor

__all__ = ["LBFGS"]


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through two points with their slopes, clamped to ``bounds``.

    Args:
        x1: first abscissa.
        f1: value at x1.
        g1: slope at x1.
        x2: second abscissa.
        f2: value at x2.
        g2: slope at x2.
        bounds: ``(low, high)``; default the interval between x1 and x2.
    """
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0  # NOTE: no real minimiser: bisect
    d2 = d2_square ** 0.5
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, low), high)


class _Point:
    """One line-search trial: step ``t``, loss ``f``, flat gradient ``g`` and slope ``gtd = g.d``."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _bracket(evaluate, d, start, trial, c1, c2, max_ls):
    """Phase 1 of the strong-Wolfe search: grow the step until a bracket (or an acceptable step) is found.

    Returns ``(points, done, evaluations)``: one point when it already satisfies both conditions.
    """
    prev, evals = start, 1
    for tries in range(max_ls):
        if trial.f > start.f + c1 * trial.t * start.gtd or (tries > 1 and trial.f >= prev.f):
            return [prev, trial], False, evals
        if abs(trial.gtd) <= -c2 * start.gtd:
            return [trial], True, evals
        if trial.gtd >= 0:
            return [prev, trial], False, evals
        t = _cubic_minimum(prev.t, prev.f, prev.gtd, trial.t, trial.f, trial.gtd,
                           bounds=(trial.t + 0.01 * (trial.t - prev.t), trial.t * 10))
        prev, trial = trial, evaluate(t)
        evals += 1
    return [start, trial], False, evals


def _strong_wolfe(evaluate, d, start, t, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step ``t`` along ``d`` that satisfies the strong Wolfe conditions (bracketing, then zooming).

    Returns ``(loss, flat_grad, t, evaluations)``.

    Args:
        evaluate: ``t -> _Point`` (evaluates the loss and gradient at ``x + t d``).
        d: the search direction.
        start: the ``_Point`` at t = 0.
        t: the first trial step.
        c1: sufficient-decrease constant.
        c2: curvature constant.
        tolerance_change: stop zooming when the bracket is this small (times max|d|).
        max_ls: the most evaluations.
    """
    d_norm = abs(d).max()
    points, done, evals = _bracket(evaluate, d, start, evaluate(t), c1, c2, max_ls)
    insufficient = False
    while not done and evals - 1 < max_ls and len(points) == 2:
        low, high = (0, 1) if points[0].f <= points[1].f else (1, 0)
        if abs(points[1].t - points[0].t) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(points[0].t, points[0].f, points[0].gtd, points[1].t, points[1].f, points[1].gtd)
        t, insufficient = _keep_inside(t, points[0].t, points[1].t, insufficient)
        trial = evaluate(t)
        evals += 1
        if trial.f > start.f + c1 * t * start.gtd or trial.f >= points[low].f:
            points[high] = trial
        else:
            if abs(trial.gtd) <= -c2 * start.gtd:
                done = True
            elif trial.gtd * (points[high].t - points[low].t) >= 0:
                points[high] = points[low]
            points[low] = trial
    best = points[0] if len(points) == 1 or points[0].f <= points[1].f else points[1]
    return best.f, best.g, best.t, evals


def _keep_inside(t, a, b, insufficient):
    """Move a zoom step away from the bracket's ends when it makes too little progress (as minFunc does)."""
    lo, hi = min(a, b), max(a, b)
    margin = 0.1 * (hi - lo)
    if min(hi - t, t - lo) >= margin:
        return t, False
    if not (insufficient or t >= hi or t <= lo):
        return t, True
    return (hi - margin if abs(t - hi) < abs(t - lo) else lo + margin), False


class LBFGS(Optimizer):
    """L-BFGS, as ``torch.optim.LBFGS``: ``step(closure)`` runs up to ``max_iter`` iterations.

    One param group only; the state lives under the first parameter, as in PyTorch.

    Args:
        params: Tensors to optimize (one group).
        lr: learning rate (the step along each direction, before any line search).
        max_iter: iterations per ``step``.
        max_eval: closure evaluations per ``step`` (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when ``max|g| <= tolerance_grad``.
        tolerance_change: stop when the step or the loss change falls below it.
        history_size: how many ``(y, s)`` pairs to keep.
        line_search_fn: None (fixed step ``lr``) or ``"strong_wolfe"``.
    """

    _scalar_state_keys = ("t", "H_diag")
    _shared_state_keys = ()
    _free_shape_state_keys = ("d", "prev_flat_grad")
    _checks = (("lr", "learning rate", {}), ("tolerance_grad", "tolerance_grad value", {}),
               ("tolerance_change", "tolerance_change value", {}))

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if max_eval is None and isinstance(max_iter, numbers.Integral):
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _validate_group(self, group) -> None:
        super()._validate_group(group)
        for key in ("max_iter", "max_eval", "history_size"):
            positive_int("LBFGS", key, group[key])
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: only 'strong_wolfe' is supported as line_search_fn (or None), got "
                             f"{group['line_search_fn']!r}")

    def add_param_group(self, param_group):
        """Refused after construction: L-BFGS has one param group, as in PyTorch.

        Args:
            param_group: the group (only the constructor's first one is accepted).
        """
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    # ---- flat views of the parameters -------------------------------------------------------
    def _flat_grad(self):
        xp = backend.get_array_module(self._params[0].array)
        parts = [p.grad.array.reshape(-1) if p.grad is not None else xp.zeros(p.array.size, p.array.dtype)
                 for p in self._params]
        return xp.concatenate(parts)

    def _add(self, t, d) -> None:
        offset = 0
        for p in self._params:
            n = p.array.size
            p.array[...] = p.array + _common.scalar(t, p.array.dtype) * d[offset:offset + n].reshape(p.array.shape)
            p._bump_version()
            offset += n

    def _evaluate(self, closure) -> float:
        with enable_grad():
            return _common.host_value("LBFGS.step", "the closure's loss", closure())

    def _directional(self, closure, t, d):
        """Evaluate at ``x + t d`` and put the parameters back to ``x`` (strong-Wolfe trials)."""
        saved = [p.array.copy() for p in self._params]
        self._add(t, d)
        loss = self._evaluate(closure)
        g = self._flat_grad()
        for p, x in zip(self._params, saved):
            p.array[...] = x
            p._bump_version()
        return _Point(t, loss, g, g.dot(d))

    # ---- the step ---------------------------------------------------------------------------
    def step(self, closure=None, found_inf=None):
        """Run up to ``max_iter`` L-BFGS iterations; return the loss of the first evaluation.

        Args:
            closure: required: clears the gradients, computes the loss, calls ``backward()`` and returns the loss.
            found_inf: not supported (L-BFGS is not a GradScaler optimizer); must be None.
        """
        if closure is None or not callable(closure):
            raise TypeError("LBFGS.step: a closure is required (it re-evaluates the model and returns the loss)")
        if found_inf is not None:
            raise ValueError("LBFGS.step: found_inf is not supported (GradScaler cannot drive L-BFGS, as in PyTorch)")
        with no_grad():
            return self._run(closure)

    def _run(self, closure):
        group = self.param_groups[0]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            first_loss = closure()
        loss = _common.host_value("LBFGS.step", "the closure's loss", first_loss)
        evals, state["func_evals"] = 1, state["func_evals"] + 1
        g = self._flat_grad()
        if abs(g).max() <= group["tolerance_grad"]:
            return first_loss
        memory = _Memory.load(state)
        for n_iter in range(1, group["max_iter"] + 1):
            state["n_iter"] += 1
            memory.direction(g, state["n_iter"] == 1, group["history_size"])
            memory.prev_g, prev_loss = g.copy(), loss
            lr = group["lr"]
            t = memory.t = min(1.0, 1.0 / abs(g).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = g.dot(memory.d)
            if gtd > -group["tolerance_change"]:
                break
            loss, g, t, used, converged = self._move(closure, group, memory.d, t, loss, g, gtd,
                                                     n_iter == group["max_iter"], group["max_eval"] - evals)
            memory.t = t
            evals += used
            state["func_evals"] += used
            if (n_iter == group["max_iter"] or evals >= group["max_eval"] or converged
                    or abs(memory.d * t).max() <= group["tolerance_change"]
                    or abs(loss - prev_loss) < group["tolerance_change"]):
                break
        memory.save(state, prev_loss)
        return first_loss

    def _move(self, closure, group, d, t, loss, g, gtd, last, evals_left):
        """Take the step along ``d``: ``(loss, g, t, evaluations, converged)`` after it."""
        if group["line_search_fn"] == "strong_wolfe":
            start = _Point(0, loss, g, gtd)
            loss, g, t, used = _strong_wolfe(lambda step: self._directional(closure, step, d), d, start, t,
                                             max_ls=evals_left)
            self._add(t, d)
            return loss, g, t, used, bool(abs(g).max() <= group["tolerance_grad"])
        self._add(t, d)
        if last:
            return loss, g, t, 0, False
        loss = self._evaluate(closure)
        g = self._flat_grad()
        return loss, g, t, 1, bool(abs(g).max() <= group["tolerance_grad"])


class _Memory:
    """L-BFGS's history: the last direction ``d`` and step ``t``, the ``(y, s, 1/y.s)`` pairs and ``H``."""

    def __init__(self, d=None, t=None, dirs=None, steps=None, ro=None, h=1, prev_g=None):
        self.d, self.t, self.dirs, self.steps, self.ro, self.h, self.prev_g = d, t, dirs, steps, ro, h, prev_g

    @classmethod
    def load(cls, state):
        """The history kept in an optimizer state (Tensors unwrapped)."""
        def raw(value):
            return value.array if isinstance(value, Tensor) else value

        def raws(values):
            return None if values is None else [raw(v) for v in values]

        return cls(raw(state.get("d")), raw(state.get("t")), raws(state.get("old_dirs")),
                   raws(state.get("old_stps")), raws(state.get("ro")), raw(state.get("H_diag", 1)),
                   raw(state.get("prev_flat_grad")))

    def save(self, state, prev_loss) -> None:
        """Store the history in PyTorch's state keys (arrays as Tensors)."""
        def wrap(value):
            return Tensor(value) if hasattr(value, "dtype") and hasattr(value, "shape") else value

        state.update(d=wrap(self.d), t=wrap(self.t), old_dirs=[wrap(v) for v in self.dirs],
                     old_stps=[wrap(v) for v in self.steps], ro=[wrap(v) for v in self.ro], H_diag=wrap(self.h),
                     prev_flat_grad=wrap(self.prev_g), prev_loss=prev_loss)

    def direction(self, g, first: bool, history_size: int) -> None:
        """Set ``d``: steepest descent the first time, else the two-loop recursion on the updated history."""
        if first:
            self.d, self.dirs, self.steps, self.ro, self.h = -g, [], [], [], 1
            return
        y, s = g - self.prev_g, self.d * self.t
        ys = y.dot(s)
        if ys > 1e-10:
            if len(self.dirs) == history_size:
                del self.dirs[0], self.steps[0], self.ro[0]
            self.dirs.append(y)
            self.steps.append(s)
            self.ro.append(1.0 / ys)
            self.h = ys / y.dot(y)
        q, alphas = -g, []
        for y_i, s_i, ro_i in zip(reversed(self.dirs), reversed(self.steps), reversed(self.ro)):
            alphas.append(s_i.dot(q) * ro_i)
            q = q + (-alphas[-1]) * y_i
        r = q * self.h
        for y_i, s_i, ro_i, a_i in zip(self.dirs, self.steps, self.ro, reversed(alphas)):
            r = r + (a_i - y_i.dot(r) * ro_i) * s_i
        self.d = r
