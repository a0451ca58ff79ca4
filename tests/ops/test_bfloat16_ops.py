"""bfloat16 on every primitive of the registry (tests/ops/test_grad_registry.CASES with
its float inputs rounded to bfloat16): the eager result follows the dtype rule and equals
the float64 computation on the same (rounded) inputs within bfloat16's rounding, as
PyTorch computes bfloat16 on CPU (in float32, rounded once); and compiled code equals
eager code on both backends."""
import numpy as onp
import pytest

from kiln import np
from kiln.base import KilnError
from kiln._core.bfloat16 import is_bfloat16
from kiln.fuzz.compare import compare
from kiln.ops import REGISTRY
from kiln.ops.rules import is_float
from conftest import wrap
from test_grad_registry import CASES

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = onp.dtype(ml_dtypes.bfloat16)
# subgraph attributes, handles and random draws: the checks below do not apply
SKIP = {"cond", "while_loop", "scan", "foreach",
        # float32 operands by definition (tests/graph/test_amp.py, test_quantization.py)
        "matmul_bf16", "conv_bf16", "dense_int8", "conv_int8"}
# MPI collectives carry float32/float64 only: they refuse bfloat16 with a clear error
REFUSED = {"allreduce", "allreduce_start", "allreduce_wait"}


def _bf16_case(name):
    prim = REGISTRY[name]
    if prim.random or name in SKIP or name not in CASES:
        return None
    case = CASES[name][0]
    if any(hasattr(v, "nodes") for v in case.attrs.values()):
        return None
    values = [onp.asarray(v) for v in case.inputs]
    if not any(v.dtype.kind == "f" for v in values):
        return None
    return case, [v.astype(BF16) if v.dtype.kind == "f" else v for v in values]


NAMES = [n for n in sorted(REGISTRY) if _bf16_case(n) is not None]


def _reference(prim, values, attrs):
    wide = [v.astype(onp.float64) if is_bfloat16(v.dtype) else v for v in values]
    return onp.asarray(prim.impl(*wide, **attrs))


@pytest.mark.parametrize("name", NAMES)
def test_eager_bfloat16_is_float64_rounded_once(name):
    prim = REGISTRY[name]
    case, values = _bf16_case(name)
    if name in REFUSED:
        with pytest.raises(KilnError, match="bfloat16"):
            prim(*[wrap(v) for v in values], **case.attrs)
        return
    try:
        out = prim(*[wrap(v) for v in values], **case.attrs)
    except Exception as exc:    # noqa: BLE001 -- the float64 case must then raise too
        pytest.fail(f"{name} raised on bfloat16 inputs: {type(exc).__name__}: {exc}")
    outs = out if isinstance(out, (list, tuple)) else [out]
    shape, dtype = prim.shape(*values, **case.attrs)
    assert outs[0].dtype == onp.dtype(dtype) and outs[0].shape == tuple(shape)
    ref = _reference(prim, values, case.attrs)
    got = outs[0].asnumpy()
    if is_float(got.dtype):
        got64, ref64 = got.astype(onp.float64), ref.astype(onp.float64)
        scale = max(1.0, float(onp.nanmax(onp.abs(ref64), initial=0.0)))
        tol = 1e-2 * onp.abs(ref64) + 1e-3 * scale
        finite = onp.isfinite(ref64)
        assert (onp.isfinite(got64) == finite).all(), name
        assert (onp.abs(got64 - ref64)[finite] <= tol[finite]).all(), (name, got64, ref64)
    elif got.dtype.kind in "iub" and name not in ("argmax", "argmin", "argsort", "sort"):
        assert (got == ref.astype(got.dtype)).all(), name


@pytest.mark.parametrize("name", NAMES)
def test_compiled_equals_eager_in_bfloat16(name):
    prim = REGISTRY[name]
    case, values = _bf16_case(name)
    if name in REFUSED:
        pytest.skip("refused eagerly (above)")

    def f(*xs):
        return prim(*xs, **case.attrs)
    findings = compare(f, [np.array(v, dtype=v.dtype) for v in values], grad=False)
    assert not findings, "\n".join(map(repr, findings))


def test_bfloat16_names_and_conversions():
    x = np.array([1.0, 2.5, 1 / 3], dtype="bfloat16")
    assert x.dtype == BF16 and np.bfloat16 is ml_dtypes.bfloat16
    assert x.asnumpy().dtype == BF16
    assert x.astype("float32").dtype == onp.float32
    assert float(x.astype("float32")[2]) == float(onp.float32(1 / 3).astype(BF16))
    assert (x * 2).dtype == BF16 and (x + np.ones(3)).dtype == onp.float32
    assert (x + np.ones(3, dtype="int32")).dtype == BF16
