"""C lowerings of the special-function and bitwise primitives (kiln/ops/special.py).

asinh, acosh, atanh, cbrt, log1p and expm1 are C99's, in double as the eager kernels compute them.
lgamma and tgamma are C's own (the eager kernels call the same libm functions per
element); digamma and erfinv are written here with the eager kernels' algorithms, step
for step: recurrence and asymptotic series, Giles' approximation with two Newton steps on
erf. Float32 inputs compute in double and round once, as eager does.
"""
import numpy as _np

OPS = frozenset(("gammaln", "gamma", "digamma", "erfinv", "bitwise_and", "bitwise_or",
                 "bitwise_xor", "invert", "arcsinh", "arccosh", "arctanh", "cbrt", "log1p",
                 "expm1"))
_C99 = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "cbrt": "cbrt",
        "log1p": "log1p", "expm1": "expm1"}

PRELUDE = r"""
static inline double kiln_digamma(double x) {
  double out = 0.0;
  if (x < 0.5) {                       /* reflection: psi(1 - x) - pi / tan(pi x) */
    out -= 3.141592653589793 / tan(3.141592653589793 * x);
    x = 1.0 - x;
  }
  for (int i = 0; i < 10 && x < 10.0; i++) {   /* psi(x) = psi(x + 1) - 1 / x */
    out -= 1.0 / x;
    x += 1.0;
  }
  double inv2 = 1.0 / (x * x);
  double series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
      1.0 / 240 - inv2 * (1.0 / 132)))));
  return out + ((log(x) - 0.5 / x) - series);
}
static inline double kiln_erfinv(double y) {
  if (y == 1.0) return INFINITY;
  if (y == -1.0) return -INFINITY;
  if (!(fabs(y) <= 1.0)) return NAN;
  double w = -log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    double c[] = {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
    double wc = w - 2.5;
    p = 2.81022636e-08;
    for (int i = 0; i < 8; i++) p = c[i] + p * wc;
  } else {
    double c[] = {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
    double wt = sqrt(w) - 3.0;
    p = -0.000200214257;
    for (int i = 0; i < 8; i++) p = c[i] + p * wt;
  }
  double x = p * y;
  for (int i = 0; i < 2; i++) x = x - (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
  return x;
}
"""

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
