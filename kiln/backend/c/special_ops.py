"""C lowerings of the special-function and bitwise primitives (kiln/ops/special.py), registered
as their elementwise rules (lowering.Elementwise).

asinh, acosh, atanh, cbrt, log1p and expm1 are C99's, in double as the eager kernels compute them.
lgamma and tgamma are C's own (the eager kernels call the same libm functions per
element); digamma and erfinv are written here with the eager kernels' algorithms, step
for step: recurrence and asymptotic series, Giles' approximation with two Newton steps on
erf. Float32 inputs compute in double and round once, as eager does. Those two are C in
csrc/special_functions.h, part of every program's prelude (loops.prelude).
"""
import numpy as _np

from .lowering import elementwise_rule

_C99 = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "cbrt": "cbrt",
        "log1p": "log1p", "expm1": "expm1"}

_FLOAT_CALLS = {"gammaln": "lgamma", "gamma": "tgamma", "digamma": "kiln_digamma",
                "erfinv": "kiln_erfinv"}

_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


@elementwise_rule(*_C99, *_FLOAT_CALLS)
def _float_call(x):
    if _np.dtype(x.out_dtype).kind != "f":
        return None
    return f"(({x.T}){_C99.get(x.op) or _FLOAT_CALLS[x.op]}((double)({x.args[0]})))"


@elementwise_rule("invert")
def _invert(x):
    if _np.dtype(x.out_dtype).kind not in "iub":
        return None
    a, T = x.args[0], x.T
    return f"((uint8_t)!({a}))" if x.out_dtype == _np.bool_ else f"(({T})~(({T}){a}))"


@elementwise_rule(*_BITWISE)
def _bitwise(x):
    if _np.dtype(x.out_dtype).kind not in "iub":
        return None
    T = x.T
    return f"(({T})((({T}){x.args[0]}) {_BITWISE[x.op]} (({T}){x.args[1]})))"
