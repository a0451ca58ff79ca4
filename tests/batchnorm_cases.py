"""Registry cases for the batch-norm primitives (kiln/ops/batchnorm.py), used by
test_grad_registry.CASES: float64 inputs, channel axis first, last and in the middle."""
import numpy as onp
import pytest

R = onp.random.default_rng(13)


def u(*s):
    return R.uniform(-1.0, 1.0, s)


def _moved(x, axis):
    return x.movedim(axis, 1)


def t_stats(x, axis):
    torch = pytest.importorskip("torch")
    red = [i for i in range(x.ndim) if i != axis]
    return torch.stack([x.mean(red), x.var(red, unbiased=False)])


def t_train(x, gamma, beta, eps, axis):
    F = pytest.importorskip("torch").nn.functional
    return F.batch_norm(_moved(x, axis), None, None, gamma, beta, training=True,
                        eps=eps).movedim(1, axis)


def _stats(x, axis):
    red = tuple(i for i in range(x.ndim) if i != axis)
    return onp.stack([x.mean(red), x.var(red)])


def batchnorm_cases(C):
    x1, x3, x0 = u(3, 4, 2, 2), u(2, 3, 5), u(5, 3)
    g1, g3 = u(3, 4, 2, 2), u(2, 3, 5)
    pg1 = onp.stack([g1.sum((0, 2, 3)), u(4)])
    return {
        "batch_norm_stats": [C(x1, axis=1, torch=t_stats), C(x3, axis=2, torch=t_stats),
                             C(x0, axis=0)],
        "batch_norm_train": [C(x1, u(4), u(4), eps=1e-3, axis=1, torch=t_train),
                             C(x3, u(5), u(5), eps=1e-5, axis=2, torch=t_train),
                             C(x3, u(3), u(3), eps=0.1, axis=1, torch=t_train)],
        "batch_norm_param_grad": [C(g1, x1, _stats(x1, 1), axis=1),
                                  C(g3, x3, _stats(x3, 2), axis=2)],
        "batch_norm_data_grad": [C(g1, x1, _stats(x1, 1), pg1, u(4), eps=1e-3, axis=1),
                                 C(g3, x3, _stats(x3, 2), onp.stack([u(5), u(5)]), u(5),
                                   eps=0.1, axis=2)],
    }
