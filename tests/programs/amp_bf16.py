"""The CPU AMP recipe: forward under torch.autocast(device_type="cpu", dtype=torch.bfloat16), a GradScaler that is
disabled (bfloat16 needs no loss scaling), Adam; a conv front end so convolutions and matmuls run in bfloat16."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from numpy_weights import init_from_numpy, report

rng = np.random.default_rng(5)
x = torch.from_numpy(rng.standard_normal((16, 2, 12)).astype(np.float32))
y = torch.from_numpy(rng.integers(0, 3, size=16))

model = nn.Sequential(nn.Conv1d(2, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(80, 32), nn.LayerNorm(32), nn.SiLU(),
                      nn.Linear(32, 3))
names = init_from_numpy(model)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cpu", enabled=False)

losses = []
for _ in range(20):
    optimizer.zero_grad()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits = model(x)
        assert logits.dtype == torch.bfloat16
        loss = F.cross_entropy(logits, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    losses.append(loss.item())
report(names, losses)
