"""Subprocess worker for tests/test_resume.py: trains an MLP with AMP for some steps, optionally resuming."""

import json
import sys

import cupynet as cn
from cupynet import nn, optim
from cupynet.amp import GradScaler, autocast
from cupynet.data import DataLoader
from cupynet.data.datasets import digits
from cupynet.train.checkpoint import Checkpoint


def build():
    cn.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 10))
    opt = optim.AdamW(model.parameters(), lr=3e-3)
    sched = optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.9)
    # NOTE: a high init scale with hysteresis and a short growth interval makes the scaler's
    # counters (growth tracker, hysteresis, skipped steps) all move during the run.
    scaler = GradScaler("cpu", init_scale=2.0 ** 30, growth_interval=3, hysteresis=2, min_scale=1.0)
    loader = DataLoader(digits("train"), batch_size=64, shuffle=True, seed=1, device="cpu")
    return model, opt, sched, scaler, loader


def main(directory, steps, resume):
    model, opt, sched, scaler, loader = build()
    ckpt = Checkpoint(directory, model, opt, sched, scaler, loader)
    step = ckpt.restore()["step"] if resume else 0
    losses = []
    while step < steps:
        for x, y in loader:
            opt.zero_grad()
            with autocast("cpu", dtype="float16"):
                loss = nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            step += 1
            losses.append(loss.item())
            if step == steps:
                break
    ckpt.save(step)
    print(json.dumps(losses))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "resume")
