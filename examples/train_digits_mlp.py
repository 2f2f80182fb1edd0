"""Train an MLP on scikit-learn's 8x8 digits with cupynet's public API (optionally with AMP).

Run: python examples/train_digits_mlp.py [--epochs 20] [--amp]
"""

import argparse

import cupynet as cn
from cupynet import nn, optim
from cupynet.amp import GradScaler, autocast
from cupynet.data import DataLoader
from cupynet.data.datasets import digits


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with cn.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(dim=1) == y).sum().item())
            total += y.shape[0]
    model.train()
    return 100.0 * correct / total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--amp", action="store_true", help="autocast + GradScaler")
    args = parser.parse_args()

    cn.manual_seed(0)
    device = cn.default_device()
    train_loader = DataLoader(digits("train"), batch_size=args.batch_size, shuffle=True, seed=0, device=device)
    test_loader = DataLoader(digits("test"), batch_size=512, device=device)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 10)).to(device)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler(device.type, enabled=args.amp)

    for epoch in range(args.epochs):
        for x, y in train_loader:
            opt.zero_grad()
            with autocast(device.type, enabled=args.amp):
                loss = nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {evaluate(model, test_loader):.1f}%")
    print(f"test accuracy: {evaluate(model, test_loader):.1f}%")


if __name__ == "__main__":
    main()
