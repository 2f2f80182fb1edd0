"""Probability distributions with torch.distributions' names and semantics.

``Normal``, ``MultivariateNormal``, ``Uniform`` (reparametrized: ``rsample`` carries gradients to the
parameters), ``Categorical``, ``Bernoulli``, and ``kl_divergence`` for pairs of the
same family. Samples come from the device's default generator (``manual_seed``),
so their values differ from torch's; their statistics agree (docs/differences.md).
"""

from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = ["Distribution", "Normal", "Uniform", "Categorical", "Bernoulli", "MultivariateNormal", "kl_divergence",
           "register_kl", "constraints"]
