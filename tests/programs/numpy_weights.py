"""Shared by the parity programs: weights and data from a NumPy RNG, the losses printed as one JSON line.

Plain PyTorch: ``python prog.py`` runs it on torch, ``cupynet run prog.py`` on cupynet; both start from the same
weights because every parameter is overwritten from NumPy after the model is built.
"""

import json

import numpy as np
import torch


def init_from_numpy(model, seed=0):
    """Overwrite every parameter, in name order, from ``numpy.random.default_rng(seed)``; return [[name, shape]].

    Matrices and kernels get uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) (nn.Linear's default range); vectors named
    ``weight`` (norm scales) 1 + uniform(-0.1, 0.1); other vectors (biases) uniform(-0.1, 0.1).
    """
    rng = np.random.default_rng(seed)
    names = []
    for name, p in sorted(model.named_parameters()):
        shape = tuple(p.shape)
        if len(shape) > 1:
            bound = 1.0 / np.sqrt(np.prod(shape[1:]))
            values = rng.uniform(-bound, bound, size=shape)
        else:
            values = rng.uniform(-0.1, 0.1, size=shape) + (1.0 if name.endswith("weight") else 0.0)
        p.data.copy_(torch.from_numpy(values.astype(np.float32)))
        names.append([name, list(shape)])
    return names


def report(names, losses):
    """Print the parameter names/shapes and the per-step losses as one JSON line (what the parity test reads)."""
    print(json.dumps({"params": names, "losses": [float(x) for x in losses]}))
