"""MXNet 1.9's Symbol flows of low precision on kiln: contrib.quantization's quantize_model /
quantize_model_mkldnn / quantize_graph + calib_graph and contrib.amp's convert_model, on a
symbol with its parameters (kiln/mx/contrib/quantization_symbol.py, symbol_models.py).

The return values' structure is MXNet 1.9.1's (checked against it with the same model:
a 3-tuple, the data and label arguments kept, a SoftmaxOutput head, aux_params a dict;
quantize_graph a 4-tuple with a collector); the int8 values are kiln's mechanism, the same
as quantize_net's, so they are checked against the float32 model, against each other, and
against MXNet 1.9.1's int8 outputs on the same model (fixtures/mxnet/
quantize_model_mkldnn_1.9.1.json, made with real MXNet).
"""
import json
import os

import numpy as onp
import pytest

from kiln._core.base import KilnError
from kiln.mx.contrib import amp
from kiln.mx.contrib.quantization import calib_graph, quantize_graph, quantize_model, \
    quantize_model_mkldnn
from mx_alias_fixture import mx  # noqa: F401  (the fixture: `import mxnet` is kiln)
from paths import FIXTURES

BATCH = 4


def _model(mx, shape=None):
    data = mx.sym.var("data", shape=shape) if shape else mx.sym.var("data")
    x = mx.sym.Convolution(data, num_filter=16, kernel=(3, 3), pad=(1, 1), name="conv0")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, name="bn0"), act_type="relu", name="relu0")
    x = mx.sym.Convolution(x, num_filter=32, kernel=(3, 3), pad=(1, 1), name="conv1")
    x = mx.sym.flatten(mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg",
                                      name="pool0"), name="flat0")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc1")
    out = mx.sym.SoftmaxOutput(x, name="softmax")
    mod = mx.mod.Module(out, context=mx.cpu())
    mod.bind(data_shapes=[("data", (BATCH, 3, 8, 8))],
             label_shapes=[("softmax_label", (BATCH,))], for_training=False)
    mx.random.seed(3)
    mod.init_params(mx.init.Xavier())
    args, auxs = mod.get_params()
    return out, args, auxs


def _data(mx, n=2 * BATCH):
    x = onp.random.default_rng(0).uniform(-1, 1, (n, 3, 8, 8)).astype(onp.float32)
    return x, mx.io.NDArrayIter(x, onp.zeros(n, onp.float32), batch_size=BATCH)


def _run(mx, sym, args, auxs, x):
    mod = mx.mod.Module(sym, context=mx.cpu(), label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", (len(x),))],
             for_training=False)
    mod.set_params(args, auxs)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros(len(x))]), is_train=False)
    return mod.get_outputs()[0].asnumpy()


def _ops(sym):
    return [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]


def test_quantize_model_returns_mxnets_triple_that_saves_and_binds(mx, tmp_path):
    sym, args, auxs = _model(mx)
    x, it = _data(mx)
    qsym, qargs, qauxs = quantize_model_mkldnn(sym, args, auxs, calib_mode="naive",
                                               calib_data=it, num_calib_examples=2 * BATCH,
                                               quantized_dtype="auto", quantize_mode="full")
    assert qsym.list_arguments()[0] == "data" and qsym.list_arguments()[-1] == "softmax_label"
    assert qsym.list_outputs() == ["softmax_output"] and _ops(qsym)[-1] == "SoftmaxOutput"
    assert "kiln:conv_int8" in _ops(qsym) and "kiln:dense_int8" in _ops(qsym)
    assert any(v.dtype == onp.int8 for v in qargs.values()) and isinstance(qauxs, dict)
    # saved and loaded as the example scripts do (symbol file + 'arg:'/'aux:' params)
    qsym.save(str(tmp_path / "q-symbol.json"))
    mx.nd.save(str(tmp_path / "q.params"), {**{"arg:" + k: v for k, v in qargs.items()},
                                            **{"aux:" + k: v for k, v in qauxs.items()}})
    loaded = mx.nd.load(str(tmp_path / "q.params"))
    largs = {k[4:]: v for k, v in loaded.items() if k.startswith("arg:")}
    lauxs = {k[4:]: v for k, v in loaded.items() if k.startswith("aux:")}
    got = _run(mx, mx.sym.load(str(tmp_path / "q-symbol.json")), largs, lauxs, x[:BATCH])
    onp.testing.assert_array_equal(got, _run(mx, qsym, qargs, qauxs, x[:BATCH]))
    onp.testing.assert_allclose(got, _run(mx, sym, args, auxs, x[:BATCH]), atol=0.02)


def test_int8_weights_are_arguments_with_mxnets_names_that_initializers_cover(mx, tmp_path):
    """MXNet's quantized symbol names a layer's int8 weight `conv0_weight_quantize` and its
    range `..._max`: imagenet_inference.py --benchmark binds the symbol and initializes every
    argument by those names (Xavier: weight_quantize -> int8 values, max -> ones)."""
    sym, args, auxs = _model(mx)
    x, it = _data(mx)
    qsym, qargs, qauxs = quantize_model(sym, args, auxs, calib_mode="naive", calib_data=it,
                                        quantize_mode="full")
    names = qsym.list_arguments()
    assert not [n for n in names if n.startswith("__const__")]
    for layer in ("conv0", "conv1", "fc1"):
        assert qargs[layer + "_weight_quantize"].dtype == onp.int8
        assert qargs[layer + "_weight_quantize_max"].dtype == onp.float32
        assert layer + "_weight" not in names and layer + "_bias" in names
    # the range is max |w| (quantize_model's default granularity: one for the tensor,
    # kept per output channel), which the int8 weight's 127 stands for
    assert onp.abs(qargs["fc1_weight_quantize"].asnumpy()).max() == 127
    onp.testing.assert_allclose(qargs["fc1_weight_quantize_max"].asnumpy(),
                                onp.full(10, onp.abs(args["fc1_weight"].asnumpy()).max()),
                                rtol=1e-6)
    qsym.save(str(tmp_path / "q-symbol.json"))
    mod = mx.mod.Module(mx.sym.load(str(tmp_path / "q-symbol.json")), context=mx.cpu(),
                        label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", (BATCH, 3, 8, 8))],
             label_shapes=[("softmax_label", (BATCH,))], for_training=False)
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    got, _ = mod.get_params()
    assert got["conv0_weight_quantize"].dtype == onp.int8     # MXNet's: one random value
    assert len(set(got["conv0_weight_quantize"].asnumpy().ravel().tolist())) == 1
    assert (got["conv0_weight_quantize_max"].asnumpy() == 1).all()
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:BATCH])], []), is_train=False)
    assert onp.isfinite(mod.get_outputs()[0].asnumpy()).all()


def test_excluded_sym_names_keep_a_layer_float32(mx):
    sym, args, auxs = _model(mx)
    _, it = _data(mx)
    qsym, qargs, _ = quantize_model(sym, args, auxs, calib_mode="naive", calib_data=it,
                                    excluded_sym_names=["conv1"], quantize_mode="full")
    assert qargs["conv1_weight"].dtype == onp.float32
    assert _ops(qsym).count("kiln:conv_int8") == 1 and "kiln:conv" in _ops(qsym)
    with pytest.raises(ValueError, match="excluded_sym_names must be a list"):
        quantize_model(sym, args, auxs, excluded_sym_names="conv1")


def test_quantize_graph_and_calib_graph_equal_quantize_model(mx):
    sym, args, auxs = _model(mx)
    x, it = _data(mx)
    qsym, qargs, qauxs, collector = quantize_graph(sym, args, auxs, calib_mode="naive")
    assert collector is not None
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label, for_training=False)
    mod.set_params(args, auxs)
    mod._exec_group.execs[0].set_monitor_callback(collector.collect, monitor_all=True)
    it.reset()
    for batch in it:
        mod.forward(batch, is_train=False)
    csym, cargs, cauxs = calib_graph(qsym, args, auxs, collector, calib_mode="naive")
    rsym, rargs, rauxs = quantize_model(sym, args, auxs, calib_mode="naive", calib_data=it,
                                        quantize_mode="full")
    onp.testing.assert_array_equal(_run(mx, csym, cargs, cauxs, x[:BATCH]),
                                   _run(mx, rsym, rargs, rauxs, x[:BATCH]))


def test_calibration_free_quantization_without_the_data_shape_rewrites_the_graph(mx):
    """imagenet_gen_qsym_mkldnn.py --calib-mode none: no calibration data and no shape on
    the data variable, so nothing to trace; the graph is rewritten layer by layer (as
    MXNet's quantize pass does) and binds at any batch size."""
    sym, args, auxs = _model(mx)
    x, _ = _data(mx)
    qsym, qargs, qauxs = quantize_model(sym, args, auxs, calib_mode="none",
                                        quantize_mode="full", excluded_sym_names=["conv1"])
    ops = _ops(qsym)
    assert ops.count("kiln:conv_int8") == 1 and "Convolution" in ops
    assert "kiln:dense_int8" in ops and ops[-1] == "SoftmaxOutput"
    assert qargs["conv0_weight_quantize"].dtype == onp.int8 and "conv0_weight" not in qargs
    assert qargs["conv1_weight"].dtype == onp.float32 and qauxs.keys() == auxs.keys()
    for rows in (x[:BATCH], x):
        onp.testing.assert_allclose(_run(mx, qsym, qargs, qauxs, rows),
                                    _run(mx, sym, args, auxs, rows), atol=0.02)
    # smart mode leaves the first convolution (27 inputs per output) in float32
    ops = _ops(quantize_model(sym, args, auxs, calib_mode="none")[0])
    assert ops.count("kiln:conv_int8") == 1 and ops.count("Convolution") == 1


def test_calibration_free_quantization_traces_a_declared_data_shape(mx):
    sym, args, auxs = _model(mx, shape=(BATCH, 3, 8, 8))
    x, _ = _data(mx, BATCH)
    qsym, qargs, qauxs = quantize_model(sym, args, auxs, calib_mode="none",
                                        quantize_mode="full")
    onp.testing.assert_allclose(_run(mx, qsym, qargs, qauxs, x), _run(mx, sym, args, auxs, x),
                                atol=0.02)


def test_amp_convert_model_runs_bfloat16_and_honours_excluded_names(mx):
    sym, args, auxs = _model(mx, shape=(BATCH, 3, 8, 8))
    x, _ = _data(mx, BATCH)
    bsym, bargs, bauxs = amp.convert_model(sym, args, auxs, target_dtype="bfloat16",
                                           excluded_sym_names=["conv0"],
                                           cast_optional_params=True)
    ops = _ops(bsym)
    assert ops.count("kiln:conv_bf16") == 1 and "kiln:conv" in ops
    assert "kiln:matmul_bf16" in ops and ops[-1] == "SoftmaxOutput"
    onp.testing.assert_allclose(_run(mx, bsym, bargs, bauxs, x), _run(mx, sym, args, auxs, x),
                                atol=0.02)
    assert _ops(amp.convert_symbol(sym, target_dtype="bfloat16")).count("kiln:conv_bf16") == 2
    with pytest.raises(KilnError, match="float16 is a GPU format"):
        amp.convert_model(sym, args, auxs)


def test_amp_convert_model_without_the_data_shape_casts_around_the_listed_ops(mx):
    """imagenet_inference.py --low-precision bfloat16 converts a symbol whose data variable
    declares no shape: amp_cast nodes as MXNet's pass writes them, any batch size bound."""
    sym, args, auxs = _model(mx)
    x, _ = _data(mx)
    bsym, bargs, bauxs = amp.convert_model(sym, args, auxs, target_dtype="bfloat16",
                                           excluded_sym_names=["conv0"])
    ops = _ops(bsym)
    assert ops.count("amp_cast") == 2 * (3 + 1) and ops.count("Convolution") == 2  # in, out
    casts = [n for n in json.loads(bsym.tojson())["nodes"] if n["op"] == "amp_cast"]
    assert {n["attrs"]["dtype"] for n in casts} == {"bfloat16", "float32"}
    assert bargs is args and bauxs is auxs
    for rows in (x[:BATCH], x):
        onp.testing.assert_allclose(_run(mx, bsym, bargs, bauxs, rows),
                                    _run(mx, sym, args, auxs, rows), atol=0.02)
    with pytest.raises(KilnError, match="float16 is a GPU format"):
        amp.convert_model(sym, args, auxs)


def _mxnet_model(mx):
    """The model whose MXNet 1.9.1 outputs are in fixtures/mxnet/quantize_model_mkldnn_1.9.1
    .json (made by building it in MXNet from these same NumPy values)."""
    rng = onp.random.default_rng(0)
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, num_filter=32, kernel=(3, 3), pad=(1, 1), name="conv0")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, name="bn0", fix_gamma=False), act_type="relu",
                          name="relu0")
    x = mx.sym.Convolution(x, num_filter=64, kernel=(3, 3), pad=(1, 1), name="conv1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.flatten(mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg",
                                      name="pool0"), name="flat0")
    out = mx.sym.FullyConnected(x, num_hidden=10, name="fc1")
    args = {"conv0_weight": rng.normal(0, .3, (32, 3, 3, 3)),
            "conv0_bias": rng.normal(0, .1, 32),
            "bn0_gamma": rng.uniform(.5, 1.5, 32), "bn0_beta": rng.normal(0, .1, 32),
            "conv1_weight": rng.normal(0, .1, (64, 32, 3, 3)),
            "conv1_bias": rng.normal(0, .1, 64),
            "fc1_weight": rng.normal(0, .2, (10, 64)), "fc1_bias": rng.normal(0, .1, 10)}
    auxs = {"bn0_moving_mean": rng.normal(0, .1, 32),
            "bn0_moving_var": rng.uniform(.5, 2, 32)}
    x = onp.random.default_rng(1).uniform(0, 1, (16, 3, 12, 12)).astype(onp.float32)
    to_nd = lambda d: {k: mx.nd.array(v.astype(onp.float32)) for k, v in d.items()}  # noqa
    return out, to_nd(args), to_nd(auxs), x


def _run_unlabelled(mx, sym, args, auxs, x):
    mod = mx.mod.Module(sym, label_names=[], context=mx.cpu())
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.set_params(args, auxs)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    return mod.get_outputs()[0].asnumpy()


@pytest.mark.parametrize("mode", ["naive", "entropy"])
def test_int8_outputs_as_close_to_float32_as_mxnets(mx, mode):
    """kiln's quantize_model_mkldnn beside MXNet 1.9.1's on the same model, parameters and
    calibration data (its outputs in the fixture). The mechanisms differ (MXNet quantizes
    the bias and requantizes each layer's calibrated output; kiln keeps the bias float32
    and calibrates each layer's input), so the outputs are not bit-equal: kiln's int8
    error against float32 must be no worse than 1.5x MXNet's, its outputs near MXNet's
    int8 ones and its classes the same. (Measured: naive 0.0217 vs MXNet's 0.0244, entropy
    0.0204 vs 0.0195, on outputs up to 1.41.)"""
    with open(os.path.join(FIXTURES, "mxnet", "quantize_model_mkldnn_1.9.1.json")) as f:
        ref = json.load(f)
    sym, args, auxs, x = _mxnet_model(mx)
    fp32 = _run_unlabelled(mx, sym, args, auxs, x[:8])
    onp.testing.assert_allclose(fp32, ref["fp32"], atol=1e-5)
    q = quantize_model_mkldnn(sym, args, auxs, label_names=(), calib_mode=mode,
                              calib_data=mx.io.NDArrayIter(x, batch_size=8),
                              num_calib_examples=16, quantized_dtype="auto",
                              quantize_mode="full")
    got = _run_unlabelled(mx, *q, x[:8])
    theirs = onp.asarray(ref[f"quantize_model_mkldnn-{mode}"])
    mx_error = onp.abs(theirs - fp32).max()
    assert onp.abs(got - fp32).max() <= 1.5 * mx_error
    onp.testing.assert_allclose(got, theirs, atol=3 * mx_error)
    assert (got.argmax(1) == theirs.argmax(1)).all()
