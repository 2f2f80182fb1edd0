"""cupynet.amp.trace: rows per dispatched op, the printed table, the summary by dtype."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import amp
from cupynet.autograd.state import STATE


def _mlp_params():
    rng = np.random.default_rng(0)
    return [cn.tensor(rng.standard_normal(s) * 0.3, dtype=cn.float32, requires_grad=True)
            for s in [(16, 8), (16,), (3, 16), (3,)]]


def _mlp_forward(params, x, labels):
    w1, b1, w2, b2 = params
    hidden = cn.ops.relu(cn.linear(x, w1, b1))
    return cn.ops.cross_entropy(cn.linear(hidden, w2, b2), labels)


def _traced_mlp(dtype=cn.float16):
    params = _mlp_params()
    x = cn.randn(4, 8)
    labels = cn.tensor([0, 2, 1, 0])
    with amp.autocast("cpu", dtype=dtype), amp.trace() as tr:
        loss = _mlp_forward(params, x, labels)
    return tr, loss


def test_mlp_trace_rows():
    tr, loss = _traced_mlp()
    assert loss.dtype == cn.float32
    linear = tr.ops("linear")
    assert len(linear) == 2
    assert linear[0].input_dtypes == ("float32", "float32", "float32")
    assert all(r.ran_in == "float16" and r.reason == "lower policy -> float16" for r in linear)
    relu = tr.ops("relu")
    assert len(relu) == 1 and relu[0].ran_in == "float16" and relu[0].reason.startswith("unlisted")
    fp32_rows = tr.ops("cross_entropy") + tr.ops("log_softmax") + tr.ops("nll_loss")
    assert fp32_rows, f"no loss op recorded:\n{tr}"
    assert all(r.ran_in == "float32" and r.reason.startswith("fp32") for r in fp32_rows)
    assert fp32_rows[0].input_dtypes[0] == "float16"


def test_mlp_trace_with_bfloat16():
    tr, _ = _traced_mlp(cn.bfloat16)
    assert {r.ran_in for r in tr.ops("linear")} == {"bfloat16"}


def test_table_is_aligned_and_complete():
    tr, _ = _traced_mlp()
    text = str(tr)
    lines = text.splitlines()
    assert lines[0].split() == ["#", "op", "inputs", "ran", "in", "reason"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert len(lines) == 2 + len(tr.rows)
    column = lines[0].index("ran in")
    for line, row in zip(lines[2:], tr.rows):
        assert line[column:].startswith(row.ran_in), f"column 'ran in' misaligned in: {line!r}"


def test_summary_counts_by_dtype():
    tr, _ = _traced_mlp()
    summary = tr.summary()
    assert isinstance(summary, dict)
    assert sum(summary.values()) == len(tr.rows)
    assert summary["float16"] == sum(1 for r in tr.rows if r.ran_in == "float16") >= 3
    assert summary["float32"] >= 1
    printed = str(summary)
    assert "float16" in printed and "total" in printed and f"{len(tr.rows)}" in printed


def test_trace_without_autocast_and_after_exit():
    a, b = cn.randn(2, 3), cn.randn(3, 2)
    with amp.trace() as tr:
        a @ b
    assert tr.rows == [("matmul", ("float32", "float32"), "float32", "autocast off")]
    a @ b
    assert len(tr) == 1, "a closed trace must record nothing"
    assert STATE.tracers == []


def test_nested_traces_both_record_and_exception_unregisters():
    a = cn.randn(3)
    with pytest.raises(KeyError):
        with amp.trace() as outer:
            a.exp()
            with amp.trace() as inner:
                a.log()
            raise KeyError("boom")
    assert [r.op for r in outer] == ["exp", "log"]
    assert [r.op for r in inner] == ["log"]
    assert STATE.tracers == []


def test_trace_cannot_be_entered_twice_at_once():
    tr = amp.trace()
    with tr:
        with pytest.raises(RuntimeError, match="trace: this trace is already recording"):
            tr.__enter__()
    assert STATE.tracers == []


def test_empty_summary_prints():
    assert str(amp.trace().summary()) == "no ops recorded"
    assert str(amp.trace()).splitlines()[0].split()[:2] == ["#", "op"]
