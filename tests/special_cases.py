"""Registry cases for the special-function, inverse-hyperbolic, cube-root and bitwise
primitives (kiln/ops/special.py),
used by test_grad_registry.CASES: float64 inputs, PyTorch as the oracle where it has the
function (gamma itself is exp(lgamma) there, for positive arguments)."""
import numpy as onp
import pytest

R = onp.random.default_rng(21)


def _torch(name):
    return lambda *a: getattr(pytest.importorskip("torch"), name)(*a)


def _t_gamma(x):
    return pytest.importorskip("torch").lgamma(x).exp()


def special_cases(C):
    mixed = onp.array([-2.5, -0.5, 0.3, 1.0, 2.7, 7.5, 12.0])
    ints = R.integers(-20, 50, (3, 4))
    return {
        "gammaln": [C(R.uniform(0.2, 9.0, (3, 4)), torch=_torch("lgamma")),
                    C(mixed), C(onp.array([1, 2, 5]))],
        "digamma": [C(R.uniform(0.2, 30.0, (3, 4)), torch=_torch("digamma"), tol=1e-12),
                    C(mixed, torch=_torch("digamma"), tol=1e-12)],
        "gamma": [C(R.uniform(0.2, 6.0, (3, 4)), torch=_t_gamma), C(mixed[:-2])],
        "erfinv": [C(R.uniform(-0.99, 0.99, (3, 4)), torch=_torch("erfinv"), tol=1e-12),
                   C(onp.array([-0.999999, -0.3, 0.0, 0.95, 0.9999]), torch=_torch("erfinv"),
                     fd=False, tol=1e-9)],
        "bitwise_and": [C(ints, ints[0], torch=_torch("bitwise_and")),
                        C(ints > 3, ints > 10, torch=_torch("bitwise_and"))],
        "bitwise_or": [C(ints, ints[:, :1], torch=_torch("bitwise_or"))],
        "bitwise_xor": [C(ints.astype(onp.int32), ints[1].astype(onp.int32),
                          torch=_torch("bitwise_xor"))],
        "invert": [C(ints, torch=_torch("bitwise_not")), C(ints > 0, torch=_torch("bitwise_not"))],
        "log1p": [C(R.uniform(-0.9, 3, (3, 4)), torch=_torch("log1p")),
                  C(onp.array([-1e-12, 1e-9, 3e-5]), torch=_torch("log1p"), fd=False)],
        "expm1": [C(R.uniform(-3, 3, (3, 4)), torch=_torch("expm1")),
                  C(onp.array([-1e-12, 1e-9, 3e-5]), torch=_torch("expm1"), fd=False)],
        "arcsinh": [C(R.uniform(-3, 3, (3, 4)), torch=_torch("asinh")),
                    C(onp.array([1e-9, -1e-5, 0.0, 30.0]), torch=_torch("asinh"), fd=False)],
        "arccosh": [C(R.uniform(1.1, 4, (3, 4)), torch=_torch("acosh"))],
        "arctanh": [C(R.uniform(-0.9, 0.9, (3, 4)), torch=_torch("atanh")),
                    C(onp.array([1e-9, -1e-6]), torch=_torch("atanh"), fd=False)],
        "cbrt": [C(R.uniform(0.3, 3, (3, 4)) * R.choice([-1, 1], (3, 4)),
                   torch=lambda x: x.sign() * x.abs() ** (1 / 3)),
                 C(onp.array([8.0, -27.0, 0.0, 1e-9]), fd=False)],
    }
