"""Registry cases for the normalization primitives (kiln/ops/normalization.py), used by
test_grad_registry.CASES: float64 inputs, PyTorch's layer_norm, softmax and log_softmax as
the oracles."""
import numpy as onp
import pytest

R = onp.random.default_rng(31)


def _t_layer_norm(x, gamma, beta, eps):
    torch = pytest.importorskip("torch")
    n = x.shape[-1]
    return torch.nn.functional.layer_norm(x, (n,), gamma.expand(n), beta.expand(n), eps)


def _t_softmax(x, log):
    torch = pytest.importorskip("torch")
    return (torch.log_softmax if log else torch.softmax)(x, -1)


def normalization_cases(C):
    def u(*s):
        return R.uniform(-1, 1, s)
    return {
        "layer_norm": [
            C(u(3, 5), u(5), u(5), eps=1e-5, torch=_t_layer_norm),
            C(u(2, 3, 4), u(4), u(4), eps=0.1, torch=_t_layer_norm),
            C(u(4, 6), onp.array(1.5), onp.array(-0.5), eps=1e-3, torch=_t_layer_norm),
            C(u(3, 1), u(1), u(1), eps=1e-5),            # rows of one: beta everywhere
        ],
        "softmax": [
            C(u(3, 5) * 3, log=False, torch=_t_softmax),
            C(u(2, 3, 4) * 3, log=True, torch=_t_softmax),
            C(u(4, 1), log=False),
        ],
    }
