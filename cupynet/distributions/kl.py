"""``kl_divergence(p, q)``: KL(p || q) in closed form, looked up by the pair of distribution types.

``register_kl(P, Q)`` adds a formula, as in torch; a pair with no formula raises
``NotImplementedError`` with torch's text.
"""

from __future__ import annotations

import math

import numpy

from ..ops import broadcast_to, log, where
from ..ops.decomposition import solve_triangular
from .bernoulli import Bernoulli
from .categorical import Categorical
from .multivariate_normal import MultivariateNormal, _mahalanobis
from .normal import Normal
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL = {}


def register_kl(type_p, type_q):
    """Decorator: register ``fn(p, q)`` as KL(p || q) for ``p`` of ``type_p`` and ``q`` of ``type_q``.

    Args:
        type_p: a Distribution subclass.
        type_q: a Distribution subclass.
    """
    def decorate(fn):
        _KL[type_p, type_q] = fn
        return fn
    return decorate


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], one value per batch entry.

    Args:
        p: a Distribution.
        q: a Distribution of the same batch shape (or broadcastable).
    """
    for type_p in type(p).__mro__:
        for type_q in type(q).__mro__:
            fn = _KL.get((type_p, type_q))
            if fn is not None:
                return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                              f"{type(q).__name__}")


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - log(var_ratio))


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    # NOTE: 0 * log(0 / q) is 0; p > 0 where q == 0 makes the divergence infinite
    t = p.probs * (p.logits - q.logits)
    t = where(q.probs == 0, math.inf, t)
    t = where(p.probs == 0, 0.0, t)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # NOTE: written with softplus-free logits: log p/q and log (1-p)/(1-q) from the clamped logits of each
    t1 = p.probs * (log(p.probs) - log(q.probs))
    t2 = (1 - p.probs) * (log(1 - p.probs) - log(1 - q.probs))
    t1 = where(p.probs == 0, 0.0, t1)
    t2 = where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    inside = (q.low <= p.low) & (p.high <= q.high)
    return where(inside, log((q.high - q.low) / (p.high - p.low)), math.inf)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    # NOTE: (tr(Sq^-1 Sp) + |Lq^-1 (mq - mp)|^2 - k) / 2 + log det Lq - log det Lp, with tr(Sq^-1 Sp) the
    # squared Frobenius norm of Lq^-1 Lp: triangular solves only, no inverse
    k = p.event_shape[0]
    lq, lp = q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril
    batch = tuple(numpy.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2])))
    trace = (solve_triangular(broadcast_to(lq, batch + (k, k)), broadcast_to(lp, batch + (k, k)),
                              upper=False) ** 2).sum((-2, -1))
    maha = _mahalanobis(lq, q.loc - p.loc)
    return 0.5 * (trace + maha - k) + q._half_log_det() - p._half_log_det()
