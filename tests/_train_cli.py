"""Shared by the issue-17 `cupynet train` tests: run the command in this process on the CPU, quickly."""

import pytest

from cupynet.cli import main

# NOTE: digits in batches of 512 is 3 steps per epoch: a run of a few epochs takes about a second
FAST = ["train", "--batch-size", "512", "--no-progress"]


@pytest.fixture(autouse=True)
def cpu_device(monkeypatch):
    """Every run on the CPU, whatever the machine has."""
    monkeypatch.setenv("CUPYNET_DEVICE", "cpu")


def run(capsys, *args):
    """``cupynet train`` with FAST and ``args``; returns (status, stdout lines, stderr)."""
    status = main([*FAST, *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err
