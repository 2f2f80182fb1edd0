"""A character-level GPT-ish model: embeddings, a causal nn.TransformerEncoderLayer (pre-norm), AdamW, clipping."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from numpy_weights import init_from_numpy, report

text = "the quick brown fox jumps over the lazy dog. " * 8
chars = sorted(set(text))
data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
block, batch = 16, 8


class TinyGPT(nn.Module):
    def __init__(self, vocab, d_model=32, nhead=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(1, block, d_model))
        self.block = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.0,
                                                activation="gelu", batch_first=True, norm_first=True)
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        h = self.block(self.tok(idx) + self.pos[:, :t], src_mask=mask)
        return self.head(self.ln(h))


model = TinyGPT(len(chars))
names = init_from_numpy(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
starts = np.random.default_rng(2).integers(0, len(data) - block - 1, size=(20, batch))

losses = []
for step in range(20):
    ix = torch.from_numpy(starts[step])
    xb = torch.stack([data[i:i + block] for i in ix])
    yb = torch.stack([data[i + 1:i + 1 + block] for i in ix])
    logits = model(xb)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), yb.view(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
report(names, losses)
