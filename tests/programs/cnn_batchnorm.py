"""A small CNN classifier: Conv2d + BatchNorm2d + ReLU + MaxPool2d, Dropout(p=0), SGD (Nesterov) with StepLR,
then an evaluation pass that uses the running statistics BatchNorm collected."""

import numpy as np
import torch
import torch.nn as nn
from numpy_weights import init_from_numpy, report

rng = np.random.default_rng(4)
images = torch.from_numpy(rng.standard_normal((32, 3, 8, 8)).astype(np.float32))
labels = torch.from_numpy(rng.integers(0, 5, size=32))

model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    nn.Flatten(), nn.Dropout(p=0.0), nn.Linear(16, 5))
names = init_from_numpy(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.5)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

losses = []
model.train()
for step in range(20):
    xb, yb = images[(step % 4) * 8:(step % 4 + 1) * 8], labels[(step % 4) * 8:(step % 4 + 1) * 8]
    optimizer.zero_grad()
    loss = criterion(model(xb), yb)
    loss.backward()
    optimizer.step()
    scheduler.step()
    losses.append(loss.item())
model.eval()
with torch.no_grad():
    losses.append(criterion(model(images), labels).item())
report(names, losses)
