"""C expressions of the elementwise primitives, one rule per op (or family of ops),
registered as each primitive's C lowering (lowering.Elementwise).

A rule gets a lowering.Args: argument expressions arrive in their own C types and each
rule casts to the type it computes in. It returns None when the op has no expression for
these dtypes; the node is then not lowerable. The special functions and bitwise ops are
special_ops.py's.
"""
import numpy as _np

from ..._core.bfloat16 import is_bfloat16
from .loops import C_TYPES
from .lowering import elementwise_rule


@elementwise_rule("negative")
def _negative(x):
    return f"(-{x.a})"


@elementwise_rule("sqrt", "floor", "ceil")
def _libm(x):
    return f"{x.op}{x.f}({x.a})" if x.float else None


@elementwise_rule("exp", "log", "sin", "cos", "erf", "tanh")
def _vector_math(x):     # vectorized where libmvec is (csrc/vector_math.h)
    if not x.float:
        return None
    # float exp and log on the double kernels: kiln_vm_exp_f, kiln_vm_log_f
    suffix = "_f" if x.f and x.op in ("exp", "log") else x.f
    return f"kiln_vm_{x.op}{suffix}({x.a})"


@elementwise_rule("arcsin", "arccos", "arctan")
def _inverse_trig(x):     # C's names: asin, acos, atan
    return f"a{x.op[3:]}{x.f}({x.a})" if x.float else None


@elementwise_rule("round")
def _round(x):
    return f"rint{x.f}({x.a})" if x.float else x.a


@elementwise_rule("abs")
def _abs(x):
    return f"fabs{x.f}({x.a})" if x.float else f"({x.a} < 0 ? -{x.a} : {x.a})"


@elementwise_rule("sign")
def _sign(x):
    a, T = x.a, x.T
    return f"(({T})(({a} > 0) - ({a} < 0)))" if not x.float else \
        f"({a} > 0 ? ({T})1 : ({a} < 0 ? ({T})-1 : {a}))"


@elementwise_rule("sigmoid")
def _sigmoid(x):
    return f"kiln_sigmoid{x.f}({x.a})" if x.float else None


@elementwise_rule("relu")
def _relu(x):
    return f"({x.a} < 0 ? ({x.T})0 : {x.a})"


@elementwise_rule("logical_not")
def _logical_not(x):
    return f"((uint8_t)!({x.args[0]}))"


@elementwise_rule("add", "subtract", "multiply")
def _arithmetic(x):
    if x.out_dtype == _np.bool_:
        return f"((uint8_t)(({x.args[0]}) {'|' if x.op == 'add' else '&'} ({x.args[1]})))" \
            if x.op != "subtract" else None
    sym = {"add": "+", "subtract": "-", "multiply": "*"}[x.op]
    return f"({x.a} {sym} {x.b})"


@elementwise_rule("divide")
def _divide(x):
    return f"({x.a} / {x.b})" if x.float else None


@elementwise_rule("power")
def _power(x):
    if x.float:
        # a constant exponent of 0.5 or 2 (Adam's sqrt(v), a square): NumPy's power loop
        # takes sqrt and the square for a broadcast exponent of these values (so -0 ** 0.5
        # is -0 and -inf ** 0.5 NaN, unlike C's pow); the same here, without a pow
        if x.consts[1] == 0.5:
            return f"sqrt{x.f}({x.a})"
        if x.consts[1] == 2.0:
            return f"({x.a} * {x.a})"
        return f"kiln_vm_pow{x.f}({x.a}, {x.b})"
    return f"kiln_ipow_{x.T.replace('_t', '')}({x.a}, {x.b})" \
        if x.T in ("int32_t", "int64_t") else None


@elementwise_rule("maximum", "minimum")
def _extremum(x):
    a, b, T = x.a, x.b, x.T
    if T in ("float", "double"):
        return f"kiln_{x.op[:3]}_{T}({a}, {b})"
    cmp = ">" if x.op == "maximum" else "<"
    return f"({a} {cmp} {b} ? {a} : {b})"


@elementwise_rule("mod")
def _mod(x):
    return f"kiln_mod_{x.T.replace('_t', '')}({x.a}, {x.b})" if x.T in (
        "float", "double", "int32_t", "int64_t") else None


_COMPARISONS = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=",
                "greater": ">", "greater_equal": ">="}


@elementwise_rule(*_COMPARISONS)
def _comparison(x):
    rt = _np.result_type(*x.in_dtypes)
    ct = C_TYPES.get(rt) or ("int32_t" if rt.kind in "iu" and rt.itemsize <= 4 else None)
    if ct is None:
        return None
    return f"((uint8_t)((({ct}){x.args[0]}) {_COMPARISONS[x.op]} (({ct}){x.args[1]})))"


_LOGICAL = {"logical_and": "&&", "logical_or": "||", "logical_xor": "!="}


@elementwise_rule(*_LOGICAL)
def _logical(x):
    return f"((uint8_t)((({x.args[0]}) != 0) {_LOGICAL[x.op]} (({x.args[1]}) != 0)))"


@elementwise_rule("where")
def _where(x):
    return f"(({x.args[0]}) ? (({x.T}){x.args[1]}) : (({x.T}){x.args[2]}))"


@elementwise_rule("cast")
def _cast(x):
    if is_bfloat16(_np.dtype(x.out_dtype)) and is_bfloat16(_np.dtype(x.in_dtypes[0])):
        return x.args[0]
    if is_bfloat16(_np.dtype(x.in_dtypes[0])):
        wide = f"kiln_bf16_to_f32({x.args[0]})"
        return f"((uint8_t)({wide} != 0))" if x.out_dtype == _np.bool_ else f"(({x.T}){wide})"
    if is_bfloat16(_np.dtype(x.out_dtype)):
        return f"kiln_f32_to_bf16((float)({x.args[0]}))"
    if x.out_dtype == _np.bool_:
        return f"((uint8_t)(({x.args[0]}) != 0))"
    return f"(({x.T})({x.args[0]}))"
