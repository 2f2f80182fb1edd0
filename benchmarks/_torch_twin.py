"""Build the PyTorch twin of a cupynet model (same architecture, same weights) for side-by-side benchmarks.

Only the layers the benchmark models use are mapped; anything else raises.
"""

from __future__ import annotations

import cupynet as cn
from cupynet import nn


def _leaf(m, torch):
    tnn = torch.nn
    if isinstance(m, nn.Linear):
        return tnn.Linear(m.in_features, m.out_features, bias=m.bias is not None)
    if isinstance(m, nn.Conv2d):
        return tnn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.dilation, m.groups,
                          bias=m.bias is not None)
    if isinstance(m, nn.MaxPool2d):
        return tnn.MaxPool2d(m.kernel_size, m.stride, m.padding)
    simple = {nn.ReLU: tnn.ReLU, nn.Flatten: tnn.Flatten, nn.Identity: tnn.Identity}
    for ours, theirs in simple.items():
        if isinstance(m, ours):
            return theirs()
    if isinstance(m, nn.Dropout):
        return tnn.Dropout(m.p)
    raise NotImplementedError(f"no PyTorch twin for {type(m).__name__}")


def twin(model, torch):
    """A torch.nn.Module with the same structure as ``model`` and its weights copied in.

    Args:
        model: a cupynet Module built from Sequential/Linear/Conv2d/MaxPool2d/ReLU/Flatten/Dropout.
        torch: the torch module.
    """
    module = _mirror(model, torch)
    state = {k: torch.tensor(cn.backend.to_numpy(v.array)) for k, v in model.state_dict().items()}
    module.load_state_dict(state)
    return module


def _mirror(m, torch):
    if isinstance(m, nn.Sequential):
        return torch.nn.Sequential(*[_mirror(c, torch) for c in m])
    children = list(m.named_children())
    if not children:
        return _leaf(m, torch)

    class InOrder(torch.nn.Module):
        """Runs its children one after another (the CNN's features, then its classifier)."""

        def forward(self, x):
            for child in self.children():
                x = child(x)
            return x

    out = InOrder()
    for name, child in children:
        out.add_module(name, _mirror(child, torch))
    return out
