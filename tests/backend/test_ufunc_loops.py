"""kiln.ops.rules.ufunc_loop_error decides whether NumPy has a ufunc loop for some dtypes
(so compiled code raises where eager does). On NumPy < 1.24, the NumPy MXNet 1.9 runs on,
ufuncs have no resolve_dtypes and it runs the loop on one element instead: both ways must
give the same verdicts."""
import numpy as onp
import pytest

from kiln.ops.rules import ufunc_loop_error

DT = [onp.dtype(d) for d in ("bool", "int8", "int32", "int64", "uint8", "float16",
                             "float32", "float64")]
UFUNCS = ["add", "subtract", "multiply", "true_divide", "floor_divide", "power", "negative",
          "bitwise_and", "invert", "left_shift", "logical_and", "maximum", "sqrt", "exp",
          "remainder", "arctan2", "absolute", "sign"]


@pytest.mark.parametrize("name", UFUNCS)
def test_running_one_element_agrees_with_resolve_dtypes(name):
    uf = getattr(onp, name)
    if not hasattr(uf, "resolve_dtypes"):
        pytest.skip("this NumPy has no resolve_dtypes to compare with")
    combos = [(a,) for a in DT] if uf.nin == 1 else [(a, b) for a in DT for b in DT]
    refused = 0
    for dtypes in combos:
        by_resolve = ufunc_loop_error(uf, dtypes, resolve=True)
        by_running = ufunc_loop_error(uf, dtypes, resolve=False)
        assert (by_resolve is None) == (by_running is None), (name, dtypes, by_resolve,
                                                              by_running)
        refused += by_resolve is not None
    if name in ("subtract", "negative", "bitwise_and", "invert", "left_shift"):
        assert refused, f"{name}: some dtype combination should have no loop"
