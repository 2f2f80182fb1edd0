"""A GRU sequence classifier over variable-length sequences: pack_padded_sequence, a bidirectional GRU, Adam with
ReduceLROnPlateau stepped on the loss, gradient clipping by value."""

import numpy as np
import torch
import torch.nn as nn
from numpy_weights import init_from_numpy, report
from torch.nn.utils.rnn import pack_padded_sequence

rng = np.random.default_rng(6)
lengths = torch.tensor([7, 7, 6, 5, 5, 4, 3, 2])  # sorted, as enforce_sorted expects
x = torch.from_numpy(rng.standard_normal((8, 7, 3)).astype(np.float32))
mask = torch.arange(7)[None, :] < lengths[:, None]
x = x * mask[:, :, None]  # zero padding
y = (x.sum(dim=(1, 2)) > 0).long()  # learnable: the sign of the sequence's sum


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 12, batch_first=True, bidirectional=True)
        self.out = nn.Linear(24, 2)

    def forward(self, inputs, lens):
        _, h = self.gru(pack_padded_sequence(inputs, lens, batch_first=True))
        return self.out(torch.cat([h[0], h[1]], dim=1))


model = Classifier()
names = init_from_numpy(model)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=2)
criterion = nn.CrossEntropyLoss()

losses = []
for _ in range(25):
    optimizer.zero_grad()
    loss = criterion(model(x, lengths), y)
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
    optimizer.step()
    scheduler.step(loss.item())
    losses.append(loss.item())
report(names, losses)
