"""Train a LeNet-style CNN on the digits (8x8), or on MNIST / CIFAR-10 from a local directory.

Run: python examples/train_cnn.py [--dataset digits|mnist:DIR|cifar10:DIR] [--epochs 5] [--amp] [--limit N]
"""

import argparse

import cupynet as cn
from cupynet import nn, optim
from cupynet.amp import GradScaler, autocast
from cupynet.data import DataLoader, Subset
from cupynet.models import build_model
from cupynet.train.data_spec import load_datasets


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="digits")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--limit", type=int, default=None, help="use only the first N training samples")
    parser.add_argument("--amp", action="store_true")
    args = parser.parse_args()

    cn.manual_seed(0)
    device = cn.default_device()
    train_set, test_set, input_shape, classes = load_datasets(args.dataset)
    if args.limit:
        train_set = Subset(train_set, list(range(min(args.limit, len(train_set)))))
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, seed=0, device=device)
    model = build_model("cnn", input_shape, classes).to(device)
    opt = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(loader))
    scaler = GradScaler(device.type, enabled=args.amp)

    for epoch in range(args.epochs):
        total = 0.0
        for x, y in loader:
            opt.zero_grad()
            with autocast(device.type, enabled=args.amp):
                loss = nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            total += loss.item()
        print(f"epoch {epoch + 1}: mean loss {total / len(loader):.4f}")

    model.eval()
    correct = 0
    with cn.no_grad():
        for x, y in DataLoader(test_set, batch_size=512, device=device):
            correct += int((model(x).argmax(dim=1) == y).sum().item())
    print(f"test accuracy: {100.0 * correct / len(test_set):.1f}%")


if __name__ == "__main__":
    main()
