"""A word-level LSTM language model with truncated BPTT (hidden state detached between chunks), as
pytorch/examples word_language_model trains it (clip_grad_norm_, learning-rate decay each epoch), with Adam."""

import numpy as np
import torch
import torch.nn as nn
from numpy_weights import init_from_numpy, report

vocab, bptt, batch = 20, 8, 4
# NOTE: a learnable stream: a fixed cycle of tokens with 10% of them replaced by noise
rng = np.random.default_rng(3)
cycle = np.tile(rng.permutation(vocab), batch * bptt * 12 // vocab + 1)[:batch * bptt * 12]
noisy = np.where(rng.random(cycle.shape) < 0.1, rng.integers(0, vocab, size=cycle.shape), cycle)
data = torch.from_numpy(noisy).view(batch, -1).transpose(0, 1).contiguous()  # (time, batch)


class RNNModel(nn.Module):
    def __init__(self, ninp=16, nhid=24, nlayers=2):
        super().__init__()
        self.encoder = nn.Embedding(vocab, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.0)
        self.decoder = nn.Linear(nhid, vocab)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, x, hidden):
        output, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(output).view(-1, vocab), hidden

    def init_hidden(self, bsz):
        return (torch.zeros(self.nlayers, bsz, self.nhid), torch.zeros(self.nlayers, bsz, self.nhid))


model = RNNModel()
names = init_from_numpy(model)
criterion = nn.NLLLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
losses = []
for _epoch in range(3):
    hidden = model.init_hidden(batch)
    for i in range(0, data.size(0) - 1, bptt):
        seq_len = min(bptt, data.size(0) - 1 - i)
        x, target = data[i:i + seq_len], data[i + 1:i + 1 + seq_len].reshape(-1)
        hidden = tuple(h.detach() for h in hidden)
        model.zero_grad()
        output, hidden = model(x, hidden)
        loss = criterion(torch.log_softmax(output, dim=-1), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    for group in optimizer.param_groups:
        group["lr"] /= 2
report(names, losses)
