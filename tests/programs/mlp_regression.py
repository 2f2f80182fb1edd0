"""An MLP fitting a cubic: MSELoss, SGD with momentum and weight decay, full batch."""

import numpy as np
import torch
import torch.nn as nn
from numpy_weights import init_from_numpy, report

rng = np.random.default_rng(1)
x = torch.from_numpy(rng.uniform(-1, 1, size=(64, 3)).astype(np.float32))
y = (x ** 3).sum(dim=1, keepdim=True) - x[:, :1] * 0.5

model = nn.Sequential(nn.Linear(3, 64), nn.Tanh(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1))
names = init_from_numpy(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
loss_fn = nn.MSELoss()

losses = []
for _ in range(30):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
report(names, losses)
