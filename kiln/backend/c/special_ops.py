"""C lowerings of the special-function and bitwise primitives (kiln/ops/special.py).

asinh, acosh, atanh, cbrt, log1p and expm1 are C99's, in double as the eager kernels compute them.
lgamma and tgamma are C's own (the eager kernels call the same libm functions per
element); digamma and erfinv are written here with the eager kernels' algorithms, step
for step: recurrence and asymptotic series, Giles' approximation with two Newton steps on
erf. Float32 inputs compute in double and round once, as eager does. Those two are C in
csrc/special_functions.h, part of every program's prelude (loops.prelude).
"""
import numpy as _np

OPS = frozenset(("gammaln", "gamma", "digamma", "erfinv", "bitwise_and", "bitwise_or",
                 "bitwise_xor", "invert", "arcsinh", "arccosh", "arctanh", "cbrt", "log1p",
                 "expm1"))
_C99 = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "cbrt": "cbrt",
        "log1p": "log1p", "expm1": "expm1"}

_FLOAT_CALLS = {"gammaln": "lgamma", "gamma": "tgamma", "digamma": "kiln_digamma",
                "erfinv": "kiln_erfinv"}


def elementwise_expr(op, args, T, out_dtype):
    """The C expression of one of OPS, or None when it has none for these dtypes."""
    a = args[0]
    if op in _C99:
        if _np.dtype(out_dtype).kind != "f":
            return None
        return f"(({T}){_C99[op]}((double)({a})))"
    if op in _FLOAT_CALLS:
        if _np.dtype(out_dtype).kind != "f":
            return None
        return f"(({T}){_FLOAT_CALLS[op]}((double)({a})))"
    if _np.dtype(out_dtype).kind not in "iub":
        return None
    if op == "invert":
        return f"((uint8_t)!({a}))" if out_dtype == _np.bool_ else f"(({T})~(({T}){a}))"
    sym = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}[op]
    return f"(({T})((({T}){a}) {sym} (({T}){args[1]})))"
