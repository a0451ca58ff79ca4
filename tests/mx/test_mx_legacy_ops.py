"""MXNet 1.x's legacy operator surface (nd.X / sym.X by MXNet's names): rounding, the
array-or-scalar binary functions, Symbol comparisons, creation Symbols, PReLU's slope
placement, output-layer gradients and executor details. Expected values come from real
MXNet 1.9.1 (run on this machine), not from kiln."""
import numpy as np
import pytest

import kiln
from kiln import nd, sym


def _eval(s, **values):
    return s.eval(**{k: nd.array(v) for k, v in values.items()})[0].asnumpy()


def test_rounding_follows_mxnet():
    x = nd.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.7, -2.7])
    expected = {
        "round": [-4, -3, -2, -1, 1, 2, 3, 4, 3, -3],      # halves away from zero
        "rint": [-4, -3, -2, -1, 0, 1, 2, 3, 3, -3],       # halves down
        "fix": [-3, -2, -1, 0, 0, 1, 2, 3, 2, -2],
        "trunc": [-3, -2, -1, 0, 0, 1, 2, 3, 2, -2],
    }
    for name, want in expected.items():
        np.testing.assert_array_equal(getattr(nd, name)(x).asnumpy(), want, err_msg=name)
        np.testing.assert_array_equal(_eval(getattr(sym, name)(sym.var("x")), x=x), want)
    np.testing.assert_array_equal(nd.logical_not(nd.array([0, 1, 2])).asnumpy(), [1, 0, 0])


def test_binary_functions_take_arrays_or_scalars():
    a = nd.array([1, 2, 3])
    np.testing.assert_array_equal(nd.equal(a, 2).asnumpy(), [0, 1, 0])
    assert nd.equal(2, a).dtype == np.float32                # 0/1 in the array's dtype
    np.testing.assert_array_equal(nd.greater(2, a).asnumpy(), [1, 0, 0])
    np.testing.assert_array_equal(nd.maximum(a, 2).asnumpy(), [2, 2, 3])
    np.testing.assert_array_equal(nd.power(2, a).asnumpy(), [2, 4, 8])
    np.testing.assert_array_equal(nd.modulo(5, a).asnumpy(), [0, 1, 2])
    assert nd.equal(2, 3) == 0 and nd.maximum(2, 3) == 3     # two numbers: a number
    e = sym.var("a")
    for s, want in ((sym.pow(2, e), [2, 4, 8]), (sym.maximum(e, 1.5), [1.5, 2, 3]),
                    (e > 2, [0, 0, 1]), (e % 3, [1, 2, 0]), (7 % e, [0, 1, 1])):
        np.testing.assert_allclose(_eval(s, a=[1, 2, 3]), want)
    b = sym.var("b")
    np.testing.assert_array_equal(_eval(e == b, a=[1, 2, 3], b=[2, 2, 2]), [0, 1, 0])
    np.testing.assert_array_equal(_eval(e <= b, a=[1, 2, 3], b=[2, 2, 2]), [1, 1, 0])
    np.testing.assert_allclose(_eval(sym.hypot(e, b), a=[1, 2, 3], b=[2, 2, 2]),
                               [2.2360680103302, 2.8284270763397217, 3.605551242828369],
                               rtol=1e-6)
    assert {e: 1}[e] == 1                                     # still hashable by identity


def test_creation_symbols():
    a = sym.var("a")
    s = sym.elemwise_add(a, sym.ones((2, 2)))
    assert s.list_arguments() == ["a"]
    np.testing.assert_array_equal(_eval(s, a=np.ones((2, 2))), [[2, 2], [2, 2]])
    np.testing.assert_array_equal(sym.arange(1, 7, 2, repeat=2).eval()[0].asnumpy(),
                                  [1, 1, 3, 3, 5, 5])
    assert sym.zeros((2,), dtype="int32").eval()[0].dtype == np.int32
    assert '"op": "_full"' in sym.full((2,), 3).tojson()


def test_prelu_gamma_fills_the_batch_and_channel_axes():
    x = nd.array([[-1.0, 0.5, 2.0], [3.0, -0.25, -2.0]])
    gamma = nd.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    np.testing.assert_allclose(nd.LeakyReLU(x, gamma=gamma, act_type="prelu").asnumpy(),
                               [[-0.1, 0.5, 2.0], [3.0, -0.125, -1.2]], rtol=1e-6)
    x4 = nd.array(np.arange(-8, 8).reshape(2, 2, 2, 2) * 0.5)
    out = nd.LeakyReLU(x4, gamma=nd.array([[0.1, 0.2], [0.3, 0.4]]), act_type="prelu")
    np.testing.assert_allclose(out.asnumpy().reshape(-1),
                               [-0.4, -0.35, -0.3, -0.25, -0.4, -0.3, -0.2, -0.1,
                                0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5], rtol=1e-6)
    with pytest.raises(kiln.KilnError, match="cannot broadcast gamma"):
        nd.LeakyReLU(x, gamma=nd.array([0.1, 0.2, 0.3, 0.4]), act_type="prelu")


def test_elu_keeps_float16_precision_near_zero():
    out = nd.LeakyReLU(nd.array([-0.004, -0.001], dtype="float16"), act_type="elu")
    np.testing.assert_allclose(out.asnumpy(), [-0.0009984970092773438,
                                               -0.0002498626708984375], rtol=1e-3)


def _bound(s, args, grads):
    return s.bind(kiln.cpu(), args={k: nd.array(v) for k, v in args.items()},
                  args_grad={k: nd.array(v) for k, v in grads.items()})


def test_linear_regression_output_gradient_is_mxnets_rule():
    s = sym.LinearRegressionOutput(sym.var("d"), sym.var("l"))
    ex = _bound(s, {"d": [[1., 2.], [3., 4.]], "l": [[0., 1.], [1., 1.]]},
                {"d": np.zeros((2, 2))})
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(ex.grad_dict["d"].asnumpy(), [[0.5, 0.5], [1.0, 1.5]])


def test_slice_channel_symbol_outputs_and_gradient():
    s = sym.SliceChannel(sym.var("d"), num_outputs=2, axis=1)
    assert len(s.list_outputs()) == 2
    ex = _bound(s, {"d": [[1., 2.], [3., 4.]]}, {"d": np.zeros((2, 2))})
    assert [o.shape for o in ex.outputs] == [(2, 1), (2, 1)]     # allocated at bind
    ex.forward(is_train=True)
    ex.backward([nd.array([[5.], [6.]]), nd.array([[7.], [8.]])])
    np.testing.assert_array_equal(ex.grad_dict["d"].asnumpy(), [[5, 7], [6, 8]])


def test_output_independent_of_arguments_passes_zero_gradient():
    ex = _bound(sym.shape_array(sym.var("d")), {"d": np.ones((2, 3))},
                {"d": np.ones((2, 3))})
    ex.forward(is_train=True)
    ex.backward([nd.ones((2,))])
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), [2, 3])
    np.testing.assert_array_equal(ex.grad_dict["d"].asnumpy(), np.zeros((2, 3)))


def test_reshape_like_replaces_a_range_of_axes():
    out = nd.reshape_like(nd.ones((30, 7)), nd.ones((15, 2, 4)), lhs_begin=0, lhs_end=1,
                          rhs_begin=0, rhs_end=2)
    assert out.shape == (15, 2, 7)                       # MXNet 1.9.1's shape
    assert nd.reshape_like(nd.ones((30, 12)), nd.ones((4, 2, 2, 3)), lhs_begin=-1,
                           rhs_begin=1).shape == (30, 2, 2, 3)


def test_sub_namespaces_build_symbols_of_mxnet_op_names():
    a, b = sym.var("A"), sym.var("B")
    s = sym.linalg.gemm2(a, b, transpose_b=True, alpha=2.0)
    assert '"op": "_linalg_gemm2"' in s.tojson()
    ones = {"A": nd.ones((2, 3)), "B": nd.ones((2, 3))}
    np.testing.assert_array_equal(s.eval(**ones)[0].asnumpy(), np.full((2, 2), 6.0))
    loaded = sym.fromjson(s.tojson())                    # the name resolves when loading
    np.testing.assert_array_equal(loaded.eval(**ones)[0].asnumpy(), np.full((2, 2), 6.0))
    np.testing.assert_array_equal(
        sym.contrib.div_sqrt_dim(a).eval(A=nd.ones((2, 4)))[0].asnumpy(), np.full((2, 4), 0.5))
    np.testing.assert_array_equal(sym.linalg.gemm2(nd.ones((1, 2)), nd.ones((2, 1))).asnumpy(),
                                  [[2.0]])                  # arrays: the nd function


def test_ordering_ops_follow_mxnet():
    x = nd.array([[3, 1, 2], [0, 5, 4]])
    np.testing.assert_array_equal(nd.topk(x, k=2, ret_typ="mask").asnumpy(),
                                  [[1, 0, 1], [0, 1, 1]])
    values, indices = nd.topk(x, k=2, ret_typ="both")
    np.testing.assert_array_equal(values.asnumpy(), [[3, 2], [5, 4]])
    np.testing.assert_array_equal(indices.asnumpy(), [[0, 2], [1, 2]])
    np.testing.assert_array_equal(nd.argsort(x, is_ascend=False).asnumpy(),
                                  [[0, 2, 1], [1, 2, 0]])
    np.testing.assert_array_equal(nd.sort(x, axis=0, is_ascend=False).asnumpy(),
                                  [[3, 5, 4], [0, 1, 2]])
    np.testing.assert_array_equal(nd.argmin(x).asnumpy(), [3])      # 1.x: shape (1,)
    np.testing.assert_array_equal(nd.diag(x, k=1).asnumpy(), [1, 4])


def test_symbols_with_eager_only_ops_infer_shapes_and_run():
    s = sym.topk(sym.var("x"), k=2, ret_typ="both")
    assert s.list_outputs() == ["topk0_output0", "topk0_output1"] or len(s.list_outputs()) == 2
    assert s.infer_shape(x=(2, 3))[1] == [(2, 2), (2, 2)]
    ex = s.simple_bind(kiln.cpu(), x=(2, 3))
    out = ex.forward(x=nd.array([[3, 1, 2], [0, 5, 4]]) * 2)
    np.testing.assert_array_equal(out[0].asnumpy(), [[6, 4], [10, 8]])


def test_reductions_over_everything_have_shape_one():
    x = nd.array([[1, np.nan, 2], [3, 4, np.nan]])
    np.testing.assert_array_equal(nd.nansum(x).asnumpy(), [10])
    np.testing.assert_array_equal(nd.nanprod(x, axis=1).asnumpy(), [2, 12])
    assert nd.sum(nd.ones((2, 2))).shape == (1,)
    assert nd.argmax(nd.array([1, 3, 2])).shape == (1,)


def test_upsampling_and_deconvolution_target_shape():
    x = nd.array(np.arange(8).reshape(1, 2, 2, 2))
    w = nd.array(np.arange(32).reshape(2, 1, 4, 4) * 0.1)
    out = nd.UpSampling(x, w, sample_type="bilinear", scale=2, num_filter=2, num_args=2)
    np.testing.assert_allclose(out.asnumpy().reshape(-1)[:8],      # MXNet 1.9.1's values
                               [0.0, 0.4, 0.5, 0.6, 0.2, 1.2, 1.8, 1.6], rtol=1e-6)
    assert nd.UpSampling(x, nd.ones((1, 1, 1, 1)), sample_type="nearest", scale=2,
                         num_args=2).shape == (1, 3, 4, 4)
    up = sym.UpSampling(sym.var("d"), sym.var("w"), sample_type="bilinear", scale=3,
                        num_filter=2, num_args=2)
    assert up.infer_shape(d=(1, 2, 4, 4)) == ([(1, 2, 4, 4), (2, 1, 5, 5)],
                                              [(1, 2, 12, 12)], [])
    deconv = sym.Deconvolution(sym.var("d"), kernel=(3, 3), stride=(2, 2),
                               target_shape=(8, 8), num_filter=5)
    assert deconv.infer_shape(d=(1, 2, 4, 4))[1] == [(1, 5, 8, 8)]


def test_executor_monitor_names_and_output_dtypes():
    data = sym.var("data", shape=(2, 3, 4, 4))
    conv = sym.Convolution(data, kernel=(2, 2), num_filter=1, name="conv")
    names = []
    ex = conv.simple_bind(kiln.cpu(), grad_req="null")
    ex.set_monitor_callback(lambda name, arr: names.append(name.decode()), monitor_all=True)
    ex.forward()
    assert names == ["data", "conv_data", "conv_weight", "conv_weight", "conv_bias",
                     "conv_bias", "conv_output"]                  # MXNet 1.9.1's order
    deconv = sym.Deconvolution(data, kernel=(2, 2), num_filter=1, name="deconv")
    assert deconv.list_arguments() == ["data", "deconv_weight"]   # no_bias defaults to True
    x = sym.var("x", dtype="int32")
    ex = sym.Cast(x, dtype="float16").simple_bind(kiln.cpu(), x=(2, 2))
    assert ex.arg_arrays[0].dtype == np.int32 and ex.outputs[0].dtype == np.float16


def test_misc_legacy_semantics():
    a = nd.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(nd.where(nd.array([1, 0]), a, -a).asnumpy(),
                                  [[1, 2], [-3, -4]])             # a vector picks rows
    np.testing.assert_array_equal(nd.diag(nd.array([1, 2, 3]), k=-1).asnumpy(),
                                  np.diag([1, 2, 3], k=-1))
    with pytest.raises(kiln.KilnError, match="outside"):
        nd.diag(nd.ones((3, 4)), k=5)
    assert nd.diag(nd.ones((3, 4)), k=4).shape == (0,)
    with pytest.raises(kiln.KilnError, match="positive"):
        nd.tile(a, reps=(1, 0))
    with pytest.raises(kiln.KilnError, match="out of range"):
        nd.take(nd.array([1, 2, 3]), nd.array([-1]), mode="raise")
    length = nd.array(np.full((2, 4), 2))                         # data shape without axis 1
    out = nd.softmax(nd.ones((2, 3, 4)), length, axis=1, use_length=True)
    np.testing.assert_allclose(out.asnumpy()[0, :, 0], [0.5, 0.5, 0.0])
    assert sym.softmin(axis=1).list_arguments() == ["softmin0_data"]


def test_positional_attributes_histogram_split_v2_gather_nd():
    s = sym.depth_to_space(sym.var("x"), 2)                     # block_size positionally
    assert s.infer_shape(x=(1, 8, 2, 3))[1] == [(1, 2, 4, 6)]
    with pytest.raises(kiln.KilnError, match="block_size"):
        nd.space_to_depth(nd.ones((1, 1, 2, 2)), 0)
    x = nd.array([0.1, 0.4, 0.6, 0.9, 2.0])
    counts, edges = nd.histogram(x, bins=2, range=(0, 1))
    np.testing.assert_array_equal(counts.asnumpy(), [2, 2])
    h = sym.histogram(a=sym.var("data"), bins=sym.var("bins"))
    ex = h.bind(kiln.cpu(), args={"data": x, "bins": nd.array([0, 0.5, 1, 3])})
    ex.forward()
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), [2, 2, 1])
    parts = sym.split_v2(sym.var("d"), indices_or_sections=(1, 3), axis=0)
    assert len(parts.list_outputs()) == 3
    with pytest.raises(IndexError):
        nd.gather_nd(nd.array([[0, 1, 2], [3, 4, 5]]), nd.array([[0, 1], [0, 3]]))
    np.testing.assert_array_equal(
        nd.gather_nd(nd.array([[0, 1, 2], [3, 4, 5]]), nd.array([[0, 1], [-1, -2]])).asnumpy(),
        [2, 4])
    flat = nd.ravel_multi_index(nd.array([[1, 2], [3, 0]]), shape=(-1, 4))
    np.testing.assert_array_equal(flat.asnumpy(), [7, 8])
    assert nd.arange(1.3, 5.6, 1.3, dtype="int32").asnumpy().tolist() == \
        np.arange(1.3, 5.6, 1.3, dtype="int32").tolist()


def test_hypot_gradient_splits_ties():
    a, b = nd.array([1.0, 2.0, 0.0, -3.0]), nd.array([1.0, 2.0, 0.0, 4.0])
    a.attach_grad()
    b.attach_grad()
    with kiln.autograd.record():
        y = nd.hypot(a, b)
    y.backward(nd.full((4,), 0.5))
    np.testing.assert_allclose(y.asnumpy(), [2 ** 0.5, 8 ** 0.5, 0, 5], rtol=1e-6)
    # d/da = a / h, d/db = b / h, each times the head gradient; 0 at the origin
    np.testing.assert_allclose(a.grad.asnumpy(), [0.5 ** 1.5, 0.5 ** 1.5, 0, -0.3], rtol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), [0.5 ** 1.5, 0.5 ** 1.5, 0, 0.4], rtol=1e-6)


def test_no_input_calls_make_variables_and_ctc_optional_inputs():
    s = sym.contrib.PSROIPooling(spatial_scale=0.0625, output_dim=2, pooled_size=3,
                                 name="psroipool")
    assert s.list_arguments() == ["psroipool_data", "psroipool_rois"]   # as MXNet names them
    ctc = sym.ctc_loss(sym.var("input"), sym.var("labels"))
    assert ctc.list_arguments() == ["input", "labels"]


def test_custom_op_errors_and_two_part_infer_shape():
    from kiln.mx import operator as mx_operator

    class Fail(mx_operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("boom")

    @mx_operator.register("kiln_test_fail")
    class FailProp(mx_operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]]                  # no auxiliary part

        def create_operator(self, ctx, shapes, dtypes):
            return Fail()

    with pytest.raises(kiln.KilnError, match="boom"):
        nd.Custom(nd.ones((2,)), op_type="kiln_test_fail")


def test_softmax_output_soft_labels_multi_output_and_normalization():
    x = nd.array([[1.0, 2.0, 3.0], [0.5, 0.5, 2.0]])
    p = np.exp(x.asnumpy()) / np.exp(x.asnumpy()).sum(1, keepdims=True)
    soft = nd.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    x.attach_grad()
    with kiln.autograd.record():
        out = nd.SoftmaxOutput(x, soft, preserve_shape=True)
    out.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), p - soft.asnumpy(), rtol=1e-5, atol=1e-7)
    data = nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 3, 2, 2)))
    label = nd.array([[[0, 1], [2, 0]], [[1, 1], [0, 2]]])
    data.attach_grad()
    with kiln.autograd.record():
        out = nd.SoftmaxOutput(data, label, multi_output=True, use_ignore=True, ignore_label=0,
                               normalization="valid", grad_scale=2.0)
    out.backward()
    e = np.exp(data.asnumpy())
    prob = e / e.sum(1, keepdims=True)
    onehot = np.eye(3)[label.asnumpy().astype(int)].transpose(0, 3, 1, 2)
    keep = (label.asnumpy() != 0)[:, None]
    want = (prob - onehot) * keep * 2.0 / keep.sum()       # MXNet's rule (test_operator)
    np.testing.assert_allclose(data.grad.asnumpy(), want, rtol=1e-5, atol=1e-7)


def test_symbolic_leaky_relu_on_one_axis_data_needs_no_gamma():
    """Only prelu has a gamma to infer; elu on 1-d data binds (MXNet 1.9.1's values)."""
    y = sym.LeakyReLU(sym.Variable("x"), act_type="elu", slope=0.25)
    assert y.list_arguments() == ["x"]
    exe = y.bind(kiln.cpu(), {"x": nd.array([-1.0, 0.0, 2.0])})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), [-0.15803012, 0.0, 2.0],
                               rtol=1e-6)


def test_pooling_same_convention_and_a_longer_pad():
    """MXNet 1.9.1: 'same' gives ceil(W / stride) windows of 1-d data and takes no pad; a
    pad longer than the spatial axes is read from its leading values (values from
    MXNet 1.9.1)."""
    x = nd.array(np.arange(10).reshape(1, 1, 10) + 1)
    out = nd.Pooling(x, kernel=2, stride=2, pad=(0, 0, 0), pool_type="max",
                     pooling_convention="same")
    assert out.asnumpy().tolist() == [[[2.0, 4.0, 6.0, 8.0, 10.0]]]
    odd = nd.Pooling(nd.array(np.ones((1, 1, 9))), kernel=2, stride=2, pad=(0, 0, 0),
                     pool_type="max", pooling_convention="same")
    assert odd.shape == (1, 1, 5)
    longer = nd.Pooling(nd.array(np.arange(10).reshape(1, 1, 10)), kernel=2, stride=2,
                        pad=(1, 2), pool_type="max")
    assert longer.asnumpy().tolist() == [[[0.0, 2.0, 4.0, 6.0, 8.0, 9.0]]]
    with pytest.raises(kiln.KilnError, match="same"):
        nd.Pooling(x, kernel=2, stride=2, pad=2, pool_type="max", pooling_convention="same")
