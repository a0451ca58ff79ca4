"""Every MXNet op kiln maps (kiln/mx/ops), bound as a symbol: backward equals
central finite differences of forward, in float64. The case table must cover every entry
of the op table, so an op added without a case fails here."""
import numpy as np
import pytest

import kiln
from kiln import sym
from kiln.mx.ops import OPS
import mxnet_sequence_math_grad_cases as sequence_math_cases
import mx_legacy_op_cases as legacy_cases

P = {"pos": True}   # inputs drawn positive (log, sqrt, ...)

# op -> (input shapes, attributes[, options])
CASES = {
    "FullyConnected": ([(2, 3), (4, 3), (4,)], {"num_hidden": 4}),
    "Convolution": ([(1, 2, 4, 4), (3, 2, 3, 3), (3,)],
                    {"kernel": (3, 3), "num_filter": 3, "pad": (1, 1), "stride": (2, 1)}),
    "Deconvolution": ([(1, 2, 3, 3), (2, 3, 2, 2), (3,)],
                      {"kernel": (2, 2), "num_filter": 3, "stride": (2, 2), "no_bias": False}),
    "BatchNorm": ([(4, 3, 2), (3,), (3,), (3,), (3,)], {"fix_gamma": False}, P),
    "LayerNorm": ([(2, 5), (5,), (5,)], {}),
    "Activation": ([(2, 3)], {"act_type": "softrelu"}),
    "LeakyReLU": ([(2, 3)], {"slope": 0.2}),
    "Pooling": ([(1, 1, 4, 5)], {"kernel": (2, 2), "stride": (2, 2), "pool_type": "avg",
                                 "pooling_convention": "full"}),
    "Flatten": ([(2, 3, 2)], {}),
    "softmax": ([(2, 4)], {"axis": 0}),
    "log_softmax": ([(2, 4)], {}),
    "SoftmaxActivation": ([(2, 4)], {}),
    "elemwise_add": ([(2, 3), (2, 3)], {}),
    "elemwise_sub": ([(2, 3), (2, 3)], {}),
    "elemwise_mul": ([(2, 3), (2, 3)], {}),
    "elemwise_div": ([(2, 3), (2, 3)], {}, P),
    "_power": ([(2, 3), (2, 3)], {}, P),
    "_maximum": ([(2, 3), (2, 3)], {}),
    "_minimum": ([(2, 3), (2, 3)], {}),
    "_plus_scalar": ([(3,)], {"scalar": 2.0}),
    "_minus_scalar": ([(3,)], {"scalar": 2.0}),
    "_rminus_scalar": ([(3,)], {"scalar": 2.0}),
    "_mul_scalar": ([(3,)], {"scalar": 2.0}),
    "_div_scalar": ([(3,)], {"scalar": 2.0}),
    "_rdiv_scalar": ([(3,)], {"scalar": 2.0}, P),
    "_power_scalar": ([(3,)], {"scalar": 3.0}),
    "_rpower_scalar": ([(3,)], {"scalar": 2.0}),
    "_maximum_scalar": ([(3,)], {"scalar": 0.1}),
    "_minimum_scalar": ([(3,)], {"scalar": 0.1}),
    "relu": ([(5,)], {}), "sigmoid": ([(5,)], {}), "tanh": ([(5,)], {}),
    "exp": ([(5,)], {}), "log": ([(5,)], {}, P), "sqrt": ([(5,)], {}, P),
    "square": ([(5,)], {}), "abs": ([(5,)], {}), "negative": ([(5,)], {}),
    "sin": ([(5,)], {}), "cos": ([(5,)], {}), "reciprocal": ([(5,)], {}, P),
    "log1p": ([(5,)], {}, P), "expm1": ([(5,)], {}), "rsqrt": ([(5,)], {}, P),
    "_copy": ([(5,)], {}),
    "clip": ([(6,)], {"a_min": -0.5, "a_max": 0.5}),
    "add_n": ([(2, 2), (2, 2), (2, 2)], {}),
    "sum": ([(2, 3, 2)], {"axis": (0, 2)}),
    "mean": ([(2, 3)], {"axis": 1, "keepdims": True}),
    "max": ([(2, 3)], {"axis": 0}),
    "min": ([(2, 3)], {"axis": 1, "exclude": True}),
    "prod": ([(2, 3)], {"axis": 1}, P),
    "dot": ([(3, 2), (3, 4)], {"transpose_a": True}),
    "batch_dot": ([(2, 3, 2), (2, 4, 2)], {"transpose_b": True}),
    "Reshape": ([(2, 3, 4)], {"shape": (-4, 1, 2, -3)}),
    "_npx_reshape": ([(2, 6)], {"newshape": (-1, 3)}),
    "transpose": ([(2, 3, 4)], {"axes": (2, 0, 1)}),
    "expand_dims": ([(2, 3)], {"axis": 1}),
    "squeeze": ([(2, 1, 3)], {"axis": 1}),
    "_square_sum": ([(3, 4)], {"axis": 1, "keepdims": True}),
    "_slice_assign": ([(3, 4), (2, 2)], {"begin": (0, 1), "end": (2, 3)}),
    "_slice_assign_scalar": ([(3, 4)], {"scalar": 2.0, "begin": (1, 0), "end": (3, 2)}),
    "Concat": ([(2, 3), (2, 1)], {"dim": 1}),
    "stack": ([(2, 3), (2, 3)], {"axis": 1}),
    "slice_axis": ([(4, 3)], {"axis": 0, "begin": 1, "end": 3}),
    "slice": ([(4, 5)], {"begin": (1, None), "end": (3, None), "step": (1, 2)}),
    "broadcast_to": ([(1, 3)], {"shape": (4, 0)}),
    "broadcast_like": ([(1, 3), (2, 3)], {}),
    "tile": ([(2, 3)], {"reps": (2, 1)}),
    "repeat": ([(2, 3)], {"repeats": 2, "axis": 1}),
    "reverse": ([(2, 3)], {"axis": 1}),
    "smooth_l1": ([(6,)], {"scalar": 2.0}),
    "UpSampling": ([(1, 2, 2, 3)], {"scale": 2, "sample_type": "nearest"}),
    "_contrib_BilinearResize2D": ([(1, 2, 3, 4)], {"height": 5, "width": 3}),
    "L2Normalization": ([(2, 3, 2)], {}),
    "InstanceNorm": ([(2, 3, 4), (3,), (3,)], {}),
}
# entries with no gradient to check, and why
NOT_DIFFERENTIABLE = {
    "_sparse_retain": "its second input is integer row numbers (the data gradient is a mask)",
    "Embedding": "integer indices (its weight gradient is a gather's, checked by npx tests)",
    "Dropout": "random; identity in predict mode", "BlockGrad": "zero gradient by design",
    "Cast": "dtype conversion", "argmax": "integer-valued", "floor": "piecewise constant",
    "ceil": "piecewise constant", "sign": "piecewise constant",
    "_kiln_constant": "no inputs", "zeros_like": "constant", "ones_like": "constant",
    "where": "selection by a condition (checked in test_mxnet_op_values)",
    "take": "integer indices (checked in test_mxnet_op_values)",
    "pick": "integer indices (checked in test_mxnet_op_values)",
    "one_hot": "integer input",
    "SoftmaxOutput": "MXNet's gradient rule, not a derivative (test_mxnet_models.py)",
    "LinearRegressionOutput": "MXNet's gradient rule, not a derivative",
    "Custom": "the user's own backward (kiln/mx/operator.py; test_mxnet_operator.py)",
}


CASES.update(sequence_math_cases.CASES)                       # Sequence*, Pad, LRN, norm, ...
NOT_DIFFERENTIABLE.update(sequence_math_cases.NOT_DIFFERENTIABLE)
CASES.update(legacy_cases.CASES)                     # unary math, SliceChannel, ...
NOT_DIFFERENTIABLE.update(legacy_cases.NOT_DIFFERENTIABLE)


def _canonical():
    seen, names = set(), []
    for name, op in OPS.items():
        if id(op.fn) not in seen:
            seen.add(id(op.fn))
            names.append(name)
    return names


def test_every_op_has_a_case():
    missing = [n for n in _canonical() if n not in CASES and n not in NOT_DIFFERENTIABLE]
    assert not missing, f"add gradient cases for {missing}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_equals_finite_differences(name):
    shapes, attrs, *opts = CASES[name]
    positive = bool(opts and opts[0].get("pos"))
    names = [f"in{k}" for k in range(len(shapes))]
    variables = [sym.var(n) for n in names]
    s = _build(name, variables, attrs)
    rng = np.random.RandomState(abs(hash(name)) % 2 ** 31)
    values = {}
    for n, shp in zip(names, shapes):
        v = rng.uniform(0.5, 1.5, shp) if positive else rng.uniform(-1, 1, shp)
        values[n] = v.astype("float64")
    shape_kw = dict(zip(names, shapes))
    arg_names = s.list_arguments()
    ex = s.simple_bind(kiln.cpu(), type_dict={n: "float64" for n in names}, **shape_kw)
    for n in arg_names:
        ex.arg_dict[n][...] = values[n]
    for n in s.list_auxiliary_states():
        ex.aux_dict[n][...] = values[n] if n in values else 1.0
    out = ex.forward(is_train=True)[0].asnumpy()
    head = rng.uniform(-1, 1, out.shape)
    ex.backward(kiln.nd.array(head, dtype="float64"))

    def f(vals):
        feed = dict(values)
        feed.update(vals)
        with kiln.autograd.train_mode():     # the mode backward ran in (BatchNorm)
            (o,) = s.eval(**{n: feed[n] for n in arg_names + s.list_auxiliary_states()})
        return float((o.asnumpy() * head).sum())
    eps = 1e-6
    for n in arg_names:
        grad = ex.grad_dict[n].asnumpy()
        flat = values[n].reshape(-1)
        for k in range(min(flat.size, 6)):
            plus, minus = flat.copy(), flat.copy()
            plus[k] += eps
            minus[k] -= eps
            fd = (f({n: plus.reshape(values[n].shape)}) -
                  f({n: minus.reshape(values[n].shape)})) / (2 * eps)
            assert abs(fd - grad.reshape(-1)[k]) < 1e-5 + 1e-4 * abs(fd), (name, n, k, fd)


def _build(name, variables, attrs):
    from kiln.mx.sym.symbol import call_op
    if OPS[name].variadic:
        return call_op(name, tuple(variables), attrs)
    names = OPS[name].input_names(attrs)
    return call_op(name, (), {**dict(zip(names, variables)), **attrs})


def test_mxnet_op_values():
    from kiln import nd
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(nd.where(nd.array([[1, 0, 1], [0, 0, 1]]), x, -x).asnumpy(),
                                  [[1, -2, 3], [-4, -5, 6]])
    np.testing.assert_array_equal(nd.take(x, nd.array([1, 0, 1])).asnumpy(),
                                  [[4, 5, 6], [1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(nd.pick(x, nd.array([2, 0]), axis=1).asnumpy(), [3, 4])
    np.testing.assert_array_equal(nd.one_hot(nd.array([1, 0]), depth=3).asnumpy(),
                                  [[0, 1, 0], [1, 0, 0]])
    assert nd.zeros_like(x).asnumpy().sum() == 0 and nd.ones_like(x).asnumpy().sum() == 6
    with pytest.raises(kiln.KilnError, match="nearest"):
        nd.UpSampling(nd.ones((1, 1, 2, 2)), scale=2, sample_type="bilinear")
