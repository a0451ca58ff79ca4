"""Cases for kiln's composed NumPy functions (kiln/np/math.py, special.py, statistics.py,
indexing.py, manipulation.py, einsum.py, ...): name -> F(kiln function, NumPy reference,
inputs, ...). Used by test_np_composed.py, which checks values against NumPy, gradients against
finite differences (and PyTorch where it has the function) and hybridized against eager, all
from this table.
"""
import numpy as onp
import pytest

from kiln import np

# NumPy 2 renamed trapz; NumPy < 1.24 (MXNet 1.9's) has only the old name
_numpy_trapezoid = getattr(onp, "trapezoid", None) or getattr(onp, "trapz")

R = onp.random.default_rng(5)


def u(*s, lo=-2.0, hi=2.0):
    return R.uniform(lo, hi, s)


class F:
    """kiln fn, NumPy fn, inputs; grad: check gradients; trace: hybridize it; torch: the
    PyTorch function of the same inputs (values and gradients compared)."""

    def __init__(self, fn, ref, *inputs, grad=True, trace=True, torch=None):
        self.fn, self.ref, self.inputs = fn, ref, inputs
        self.grad, self.trace, self.torch = grad, trace, torch


def _t(name):
    return lambda *a: getattr(pytest.importorskip("torch"), name)(*a)


def _ein(spec):
    return F(lambda *x: np.einsum(spec, *x), lambda *x: onp.einsum(spec, *x),
             *[u(*s) for s in _EIN_SHAPES[spec]],
             torch=lambda *x: pytest.importorskip("torch").einsum(spec, *x))


_EIN_SHAPES = {"ij,jk->ik": [(3, 4), (4, 2)], "ij,ij->i": [(3, 4), (3, 4)], "ij->": [(3, 4)],
               "ii->i": [(3, 3)], "ii": [(3, 3)], "...j,jk->...k": [(2, 3, 4), (4, 2)],
               "bij,bjk->bik": [(2, 3, 4), (2, 4, 2)], "i,j->ij": [(3,), (2,)],
               "ij,jk,kl->il": [(2, 3), (3, 4), (4, 2)], "ijk->kji": [(2, 3, 4)],
               "bhqd,bhkd->bhqk": [(2, 2, 3, 4), (2, 2, 5, 4)], "ij,j": [(3, 4), (4,)],
               "iij->j": [(3, 3, 2)]}

_A = u(3, 4)
_POS = u(3, 4, lo=1.1, hi=3.0)


def _tdiff(x):
    return pytest.importorskip("torch").diff(x)


CASES = {
    "arctan2": F(np.arctan2, onp.arctan2, u(3, 4), u(3, 4), torch=_t("atan2")),
    "arctan2_axes": F(np.arctan2, onp.arctan2, onp.array([0.0, -0.0, 0, -0.0, 1, -1, 0, 0]),
                      onp.array([0.0, 0.0, -0.0, -0.0, 0, 0, 1, -1]), grad=False),
    "hypot": F(np.hypot, onp.hypot, u(3, 4), u(4), torch=_t("hypot")),
    "hypot_big": F(np.hypot, onp.hypot, onp.array([3e300, 0.0, 1e-300]),
                   onp.array([4e300, 0.0, 1e-300]), grad=False, trace=False),
    "copysign": F(np.copysign, onp.copysign, u(3, 4), onp.array([-1.0, 2.0, -0.5, 0.5]),
                  torch=_t("copysign")),
    "copysign_zeros": F(np.copysign, onp.copysign, u(3, 4), onp.array([-1.0, 2.0, -0.0, 0.0]),
                        grad=False),
    "cbrt": F(np.cbrt, onp.cbrt, u(3, 4)),
    "fabs": F(np.fabs, onp.fabs, u(3, 4)),
    "fix": F(np.fix, onp.fix, u(3, 4) * 3, grad=False),
    "trunc": F(np.trunc, onp.trunc, u(3, 4) * 3, grad=False),
    "degrees": F(np.degrees, onp.degrees, u(3, 4)),
    "radians": F(np.radians, onp.radians, u(3, 4)),
    "arcsinh": F(np.arcsinh, onp.arcsinh, u(3, 4) * 3, torch=_t("asinh")),
    "arccosh": F(np.arccosh, onp.arccosh, _POS, torch=_t("acosh")),
    "arctanh": F(np.arctanh, onp.arctanh, u(3, 4, lo=-0.9, hi=0.9), torch=_t("atanh")),
    "float_power": F(np.float_power, onp.float_power, _POS, u(4)),
    "heaviside": F(np.heaviside, onp.heaviside, onp.array([-1.5, 0.0, 2.0]),
                   onp.array([0.5, 0.25, 0.5]), grad=False),
    "logaddexp": F(np.logaddexp, onp.logaddexp, u(3, 4) * 20, u(3, 4),
                   torch=_t("logaddexp")),
    "ldexp": F(np.ldexp, onp.ldexp, u(3, 4), onp.array([1, 2, -3, 0])),
    "sinc": F(np.sinc, onp.sinc, onp.array([-1.3, 0.0, 0.4, 2.2])),
    "signbit": F(np.signbit, onp.signbit, onp.array([-1.0, -0.0, 0.0, 2.0]), grad=False),
    "nan_to_num": F(np.nan_to_num, onp.nan_to_num,
                    onp.array([1.0, onp.nan, onp.inf, -onp.inf]), grad=False),
    "diff": F(np.diff, onp.diff, u(3, 5), torch=_tdiff),
    "diff_n2_prepend": F(lambda x: np.diff(x, n=2, axis=0, prepend=0.5),
                         lambda x: onp.diff(x, n=2, axis=0, prepend=0.5), u(4, 3)),
    "ediff1d": F(lambda x: np.ediff1d(x, to_end=onp.array([1.0, 2.0])),
                 lambda x: onp.ediff1d(x, to_end=[1.0, 2.0]), u(2, 3)),
    "diagonal": F(lambda x: np.diagonal(x, 1), lambda x: onp.diagonal(x, 1), u(3, 4),
                  torch=lambda x: pytest.importorskip("torch").diagonal(x, 1)),
    "diagonal_neg_3d": F(lambda x: np.diagonal(x, -1, 2, 0), lambda x: onp.diagonal(x, -1, 2, 0),
                         u(3, 2, 4)),
    "trace": F(np.trace, onp.trace, u(3, 4), torch=_t("trace")),
    "diagflat": F(lambda x: np.diagflat(x, -1), lambda x: onp.diagflat(x, -1), u(2, 2)),
    "atleast_3d": F(np.atleast_3d, onp.atleast_3d, u(4)),
    "append": F(lambda a, b: np.append(a, b, axis=0), lambda a, b: onp.append(a, b, axis=0),
                u(2, 3), u(1, 3)),
    "delete": F(lambda x: np.delete(x, [0, 2], axis=1), lambda x: onp.delete(x, [0, 2], axis=1),
                u(3, 4)),
    "insert": F(lambda x, v: np.insert(x, [1, 1, 3], v), lambda x, v: onp.insert(x, [1, 1, 3], v),
                u(5), u(3)),
    "insert_block": F(lambda x, v: np.insert(x, 2, v, axis=1),
                      lambda x, v: onp.insert(x, 2, v, axis=1), u(3, 4), u(3)),
    "roll": F(lambda x: np.roll(x, (1, -1), (0, 1)), lambda x: onp.roll(x, (1, -1), (0, 1)),
              u(3, 4), torch=lambda x: pytest.importorskip("torch").roll(x, (1, -1), (0, 1))),
    "rot90": F(lambda x: np.rot90(x, 3), lambda x: onp.rot90(x, 3), u(2, 3, 4),
               torch=lambda x: pytest.importorskip("torch").rot90(x, 3)),
    "rollaxis": F(lambda x: np.rollaxis(x, 2), lambda x: onp.rollaxis(x, 2), u(2, 3, 4)),
    "compress": F(lambda x: np.compress([True, False, True], x, axis=0),
                  lambda x: onp.compress([True, False, True], x, axis=0), u(3, 4)),
    "choose": F(lambda a, b: np.choose(onp.array([[0, 1, 1, 0]] * 3), [a, b]),
                lambda a, b: onp.choose(onp.array([[0, 1, 1, 0]] * 3), [a, b]), u(3, 4), u(4)),
    "select": F(lambda x: np.select([x < 0, x > 1], [x, x * 2], 3.0),
                lambda x: onp.select([x < 0, x > 1], [x, x * 2], 3.0), u(3, 4)),
    "ptp": F(lambda x: np.ptp(x, axis=1), lambda x: onp.ptp(x, axis=1), u(3, 4)),
    "cov": F(np.cov, onp.cov, u(3, 5), torch=_t("cov")),
    "cov_xy_cols": F(lambda a, b: np.cov(a, b, rowvar=False, bias=True),
                     lambda a, b: onp.cov(a, b, rowvar=False, bias=True), u(5, 2), u(5, 2)),
    "corrcoef": F(np.corrcoef, onp.corrcoef, u(3, 5), torch=_t("corrcoef")),
    "correlate_valid": F(np.correlate, onp.correlate, u(6), u(3)),
    "correlate_same": F(lambda a, v: np.correlate(a, v, "same"),
                        lambda a, v: onp.correlate(a, v, "same"), u(6), u(4)),
    "correlate_full_swapped": F(lambda a, v: np.correlate(a, v, "full"),
                                lambda a, v: onp.correlate(a, v, "full"), u(3), u(5)),
    "trapz": F(lambda y, x: np.trapz(y, x, axis=0),
               lambda y, x: _numpy_trapezoid(y, x, axis=0),
               u(4, 3), onp.array([0.0, 0.5, 1.5, 2.0])),
    "partition": F(lambda x: np.sort(np.partition(x, 2, axis=1), axis=1),
                   lambda x: onp.sort(onp.partition(x, 2, axis=1), axis=1), u(3, 5), trace=False),
    "apply_along_axis": F(lambda x: np.apply_along_axis(lambda r: r * r, 0, x),
                          lambda x: onp.apply_along_axis(lambda r: r * r, 0, x), u(3, 4)),
}
CASES.update({f"einsum {s}": _ein(s) for s in _EIN_SHAPES})
# hybridized-vs-eager compiles a program per case: these repeat what other cases compile
# (a product, a reshape, a transpose); their values and gradients are still checked
for _name in ["degrees", "radians", "fabs", "ediff1d", "cov_xy_cols", "correlate_same",
              "rollaxis", "atleast_3d", "einsum ij,ij->i", "einsum ij->", "einsum ii",
              "einsum bij,bjk->bik", "einsum i,j->ij", "einsum ijk->kji",
              "einsum ij,j"]:
    CASES[_name].trace = False
