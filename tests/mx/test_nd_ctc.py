"""nd.CTCLoss: losses as MXNet 1.9.1 and PyTorch's ctc_loss give them (both blank
conventions, data and label lengths), gradients equal to PyTorch's, hybridized equal to
eager."""
import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import nd
from kiln.fuzz.compare import compare
from conftest import assert_close, wrap

T, N, C = 6, 3, 5
X = onp.random.default_rng(0).uniform(-1, 1, (T, N, C))
LABEL = onp.array([[2, 1, 0, 0], [3, 2, 2, 0], [1, 2, 1, 3]])      # 'first': padded with 0
LENGTHS = [2, 3, 4]
DATA_LENGTHS = onp.array([4, 6, 5])

# what MXNet 1.9.1 printed for these inputs (float32)
MXNET = {"first": [6.366668, 5.1556206, 6.3118653], "last": [5.031408, 8.065324, 5.7533617],
         "lengths": [4.269417, 5.1556206, 5.7947]}


def _kiln(case, data):
    if case == "first":
        return nd.CTCLoss(data, nd.array(LABEL))
    if case == "last":
        return nd.CTCLoss(data, nd.array(LABEL - 1), blank_label="last")
    return nd.CTCLoss(data, nd.array(LABEL), nd.array(DATA_LENGTHS), nd.array(LENGTHS),
                      use_data_lengths=True, use_label_lengths=True)


def _torch(case, data):
    torch = pytest.importorskip("torch")
    logp = torch.log_softmax(data, -1)
    labels = torch.tensor(onp.where(LABEL - 1 < 0, 0, LABEL - 1) if case == "last" else LABEL)
    lengths = torch.tensor(DATA_LENGTHS if case == "lengths" else [T] * N)
    return torch.nn.functional.ctc_loss(logp, labels, lengths, torch.tensor(LENGTHS),
                                        blank=C - 1 if case == "last" else 0,
                                        reduction="none")


@pytest.mark.parametrize("case", sorted(MXNET))
def test_loss_and_gradient(case):
    torch = pytest.importorskip("torch")
    assert_close(_kiln(case, nd.array(X.astype(onp.float32))), MXNET[case], rtol=1e-5)
    x = wrap(X)
    x.attach_grad()
    with autograd.record():
        loss = _kiln(case, x)
        (loss * wrap(onp.array([1.0, -0.5, 2.0]))).sum().backward()
    tx = torch.tensor(X, requires_grad=True)
    ref = _torch(case, tx)
    (ref * torch.tensor([1.0, -0.5, 2.0], dtype=torch.float64)).sum().backward()
    assert_close(loss, ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_hybridized_equals_eager():
    def f(data, label):
        return nd.CTCLoss(data, label) * 1.0
    findings = compare(f, [nd.array(X), nd.array(LABEL)], strict=True)
    assert not findings, "\n".join(map(repr, findings))


def test_bad_shapes_are_clear_errors():
    with pytest.raises(kiln.KilnError, match="CTCLoss: expected data"):
        nd.CTCLoss(nd.array(X[0]), nd.array(LABEL))
    with pytest.raises(kiln.KilnError, match="blank_label"):
        nd.CTCLoss(nd.array(X), nd.array(LABEL), blank_label="middle")


def test_frames_past_the_data_length_get_zero_gradient_even_when_nan():
    """MXNet 1.9.1 ignores frames past data_lengths: NaN there leaves the loss finite and
    their gradient 0 (values below printed by MXNet 1.9.1 for this input)."""
    x = onp.random.RandomState(0).randn(4, 2, 4).astype(onp.float32)
    x[3, :, :] = onp.nan
    x[2, 1, :] = onp.nan
    data = nd.array(x)
    data.attach_grad()
    with autograd.record():
        loss = nd.CTCLoss(data, nd.array([[1, 2], [1, 0]]), nd.array([3, 2]),
                          use_data_lengths=True)
    loss.backward()
    assert_close(loss.asnumpy(), [3.684399, 2.0152934], rtol=1e-5, atol=1e-5)
    grad = data.grad.asnumpy()
    assert_close(grad[0, 0], [-0.1449771, -0.4771089, 0.1372342, 0.484852], rtol=1e-4,
                 atol=1e-5)
    assert_close(grad[2, 0], [0.3462751, 0.1153213, -0.5218632, 0.060267], rtol=1e-4,
                 atol=1e-5)
    assert (grad[2, 1] == 0).all() and (grad[3] == 0).all()
