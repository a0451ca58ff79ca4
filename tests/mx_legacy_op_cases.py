"""Gradient cases (and reasons for none) for the MXNet ops of kiln/mx/ops/unary.py, the
scalar comparisons of kiln/mx/ops/math.py and the creation ops of kiln/mx/ops/tensor.py,
merged into test_mxnet_ops_grad's tables."""
P = {"pos": True}

CASES = {
    "arcsinh": ([(5,)], {}), "arctan": ([(5,)], {}), "cbrt": ([(5,)], {}, P),
    "cosh": ([(5,)], {}), "sinh": ([(5,)], {}), "tan": ([(5,)], {}),
    "degrees": ([(5,)], {}), "radians": ([(5,)], {}),
    "log10": ([(5,)], {}, P), "log2": ([(5,)], {}, P),
    "softsign": ([(5,)], {}),
    "nansum": ([(2, 3)], {"axis": 1}),
    "nanprod": ([(2, 3)], {"axis": 0}, P),
    "sort": ([(2, 4)], {"is_ascend": False}),
    "diag": ([(3, 3)], {"k": 1}),
    "_hypot_scalar": ([(4,)], {"scalar": 2.0}),
    "reshape_like": ([(2, 6), (5, 3, 2)], {"lhs_begin": 1, "rhs_begin": 1}),
}

_ROUNDING = "piecewise constant (zero gradient, as MXNet's)"
_COMPARISON = "a comparison: 0/1 values"
NOT_DIFFERENTIABLE = {
    "arccos": "defined on [-1, 1] only; its primitive's gradient is in test_grad_registry",
    "arcsin": "defined on [-1, 1] only; its primitive's gradient is in test_grad_registry",
    "arctanh": "defined on (-1, 1) only; its primitive's gradient is in test_grad_registry",
    "arccosh": "defined above 1 only; its primitive's gradient is in test_grad_registry",
    "trunc": _ROUNDING, "fix": _ROUNDING, "round": _ROUNDING, "rint": _ROUNDING,
    "logical_not": _COMPARISON,
    "SliceChannel": "several outputs (this test reads one); test_mx_legacy_ops.py checks it",
    "_mod_scalar": "piecewise; the mod primitive's gradient is in test_grad_registry",
    "_rmod_scalar": "piecewise; the mod primitive's gradient is in test_grad_registry",
    "gather_nd": "integer indices (npx.gather_nd's gradient is checked by its tests)",
    "_histogram": "counts: integer-valued", "_split_v2": "several outputs (split's)",
    "argsort": "integer-valued", "argmin": "integer-valued",
    "topk": "indices by default; its values are a gather (test_mx_legacy_ops.py)",
    "_zeros": "no inputs", "_ones": "no inputs", "_full": "no inputs",
    "_arange": "no inputs", "_eye": "no inputs",
}
for _name in ("_equal_scalar _not_equal_scalar _greater_scalar _greater_equal_scalar "
              "_lesser_scalar _lesser_equal_scalar _logical_and_scalar _logical_or_scalar "
              "_logical_xor_scalar").split():
    NOT_DIFFERENTIABLE[_name] = _COMPARISON
