"""MXNet 1.9's Symbol flow of `mx.contrib.quantization`: quantize_model,
quantize_model_mkldnn, and quantize_graph + calib_graph, on (symbol, arg_params,
aux_params) as saved by `Module.save_checkpoint`.

A front end onto quantize_net's mechanism (quantization.py; graph/passes/quantize.py,
hybrid/calibrate.py): the symbol is loaded as a SymbolBlock (symbol_models.py), quantized in
place like a Gluon network, and exported; MXNet's return values come back:
(qsym, qarg_params, aux_params), where qsym keeps the data and label names and its loss
head, and binds in a Module. How it differs from MXNet, and why:
- qsym's int8 layers are kiln's fused nodes (conv_int8, dense_int8: quantize, int8
  product, requantize, bias, BatchNorm, residual add and ReLU in one), not MXNet's
  _contrib_quantize_v2 / _sg_mkldnn_conv / _contrib_requantize chain. Their weights are
  arguments with MXNet's names (`mxnet_names`), so an initializer's name patterns and a
  .params file cover them: `conv0_weight_quantize` (int8), `conv0_weight_quantize_max`
  (max |w| per output channel; kiln's ranges are symmetric, so there is no `_min`) and
  `conv0_bias` (a convolution's bias with its BatchNorm folded in, float32).
- kiln quantizes a traced graph, so it needs the data's shape: from calib_data, or (for
  calib_mode='none') from the data variable's `__shape__` attribute. With neither, the
  graph is rewritten layer by layer instead (symbol_rewrite.quantize_dynamic: no BatchNorm
  folding, activations quantized per call), as MXNet's pass does without shapes.
- excluded_sym_names name Convolution / FullyConnected nodes (the layers kiln quantizes);
  other names (a flatten, a pooling) are accepted and change nothing, since kiln keeps
  those ops in float32 anyway.
"""
import json

import numpy as _np

from ..._core.base import KilnError
from .quantize_net import layer_of, quantize_in_place
from .symbol_rewrite import quantize_dynamic, weight_range
from .symbol_models import as_block, as_symbol, data_example, declared_shapes, layer_weights, \
    split_loss_head

__all__ = ["quantize_model", "quantize_model_mkldnn", "quantize_graph", "calib_graph"]


def _check_lists(excluded_sym_names, excluded_op_names):
    for what, value in (("excluded_sym_names", excluded_sym_names),
                        ("excluded_op_names", excluded_op_names)):
        if value is not None and not isinstance(value, list):
            raise ValueError(f"{what} must be a list of strings representing the names of "
                             f"the {'symbols' if what == 'excluded_sym_names' else 'operators'}"
                             f" that will not be quantized, while received type "
                             f"{type(value)}")


def _quantize(sym, arg_params, aux_params, data_names, label_names, excluded_sym_names,
              excluded_op_names, calib_mode, calib_data, num_calib_examples, quantized_dtype,
              quantize_mode, quantize_granularity, logger):
    if quantized_dtype not in ("int8", "uint8", "auto"):
        raise ValueError(f"unknown quantized_dtype {quantized_dtype} received, expected "
                         "`int8`, `uint8` or `auto`")
    if quantize_granularity not in ("tensor-wise", "channel-wise"):
        raise ValueError(f"unkonwn quantize_granularity {quantize_granularity} received, "
                         "expected `tensor-wise` or `channel-wise`.")
    calib_mode = "none" if calib_mode is None else calib_mode
    if calib_mode not in ("none", "naive", "entropy"):
        raise ValueError(f"unknown calibration mode {calib_mode} received, expected "
                         "`none`, `naive`, or `entropy`")
    if calib_mode != "none" and calib_data is None:
        raise ValueError(f"calib_data must be provided when calib_mode={calib_mode}")
    if len(data_names) != 1:
        raise KilnError(f"quantize_model: kiln quantizes models with one data input, got "
                        f"data_names={tuple(data_names)}")
    body, head = split_loss_head(sym, label_names)
    shapes = None
    if calib_mode == "none":
        shapes = declared_shapes(sym, data_names)
        if shapes is None:      # nothing to trace with: MXNet's way, a rewrite of the graph
            if logger:
                logger.info("Quantizing symbol (no data shape: each layer on its own)")
            qsym, qargs = quantize_dynamic(sym, arg_params, excluded_sym_names,
                                           excluded_op_names, quantize_mode,
                                           quantize_granularity == "channel-wise")
            return qsym, qargs, dict(aux_params or {})
        calib_data = None
    example = data_example(calib_data, shapes)
    if logger:
        logger.info("Quantizing symbol")
    block = as_block(body, arg_params, aux_params, data_names)
    quantize_in_place(block, quantized_dtype, quantize_mode, quantize_granularity,
                      exclude_layers=[layer_of(w) for w in
                                      layer_weights(sym, excluded_sym_names)],
                      exclude_operators=excluded_op_names, calib_data=calib_data,
                      data_shapes=[x.shape for x in example], calib_mode=calib_mode,
                      num_calib_examples=num_calib_examples)
    if logger:
        logger.info("Quantizing parameters")
    qsym, qargs, qaux = as_symbol(block, example, head)
    return mxnet_names(qsym, qargs, block._kiln_precision[1]["int8_layers"]) + (qaux,)


INT8_OPS = ("kiln:conv_int8", "kiln:dense_int8")


def _weight_of(wq, layers, taken):
    """The weight parameter whose int8 value `wq` is (layers: quantize_in_place's specs)."""
    for name, spec in layers.items():
        if name not in taken and spec["weight"][0].shape == wq.shape and \
                _np.array_equal(spec["weight"][0], wq):
            return name
    return None


def mxnet_names(qsym, arg_params, layers):
    """(qsym, arg_params) with each int8 layer's constants as MXNet's quantized symbol names
    them, and kept arguments (a .params file carries them; an initializer's name patterns
    cover them): for the weight `conv0_weight`, `conv0_weight_quantize` (int8),
    `conv0_weight_quantize_max` (the graph divides it by 127 into kiln's per-channel scale)
    and `conv0_bias` (float32: the folded bias of a convolution, or a Dense layer's zeros
    when it has no bias; `conv0_folded_bias` if the name is taken)."""
    from .. import nd, sym
    nodes = json.loads(qsym.tojson())["nodes"]
    names = {n["name"] for n in nodes}
    args, replace, taken = dict(arg_params), {}, set()
    for node in nodes:
        if node["op"] not in INT8_OPS:
            continue
        wq, scale, bias = (nodes[i[0]]["name"] for i in node["inputs"][1:4])
        weight = _weight_of(args[wq].asnumpy(), layers, taken) if wq in args else None
        if weight is None:
            continue
        taken.add(weight)
        base = weight[:-len("weight")] if weight.endswith("weight") else weight + "_"
        bias_name = base + "bias" if base + "bias" not in names else base + "folded_bias"
        for old, new in ((wq, weight + "_quantize"), (scale, weight + "_quantize_max"),
                         (bias, bias_name)):
            if old not in args or not old.startswith("__const__."):
                continue
            value = args.pop(old).asnumpy()
            if old == scale:
                value = weight_range(value)
            args[new] = nd.array(value, dtype=value.dtype)
            var = sym.var(new, shape=value.shape, dtype=value.dtype.name)
            replace[old] = var / 127.0 if old == scale else var
    return (qsym(**replace) if replace else qsym), args


def quantize_model(sym, arg_params, aux_params, data_names=("data",),
                   label_names=("softmax_label",), ctx=None, excluded_sym_names=None,
                   excluded_op_names=None, calib_mode="entropy", calib_data=None,
                   num_calib_examples=None, quantized_dtype="int8", quantize_mode="smart",
                   quantize_granularity="tensor-wise", logger=None):
    """(qsym, qarg_params, aux_params): the model with its convolution and FullyConnected
    layers in int8, calibrated on `calib_data` (a DataIter) unless calib_mode='none'."""
    _check_lists(excluded_sym_names, excluded_op_names)
    return _quantize(sym, arg_params, aux_params, list(data_names), list(label_names or ()),
                     excluded_sym_names, excluded_op_names, calib_mode, calib_data,
                     num_calib_examples, quantized_dtype, quantize_mode,
                     quantize_granularity, logger)


def quantize_model_mkldnn(sym, arg_params, aux_params, data_names=("data",),
                          label_names=("softmax_label",), ctx=None, excluded_sym_names=None,
                          excluded_op_names=None, calib_mode="entropy", calib_data=None,
                          num_calib_examples=None, quantized_dtype="int8",
                          quantize_mode="smart", quantize_granularity="tensor-wise",
                          logger=None):
    """MXNet's oneDNN flavour of quantize_model: kiln's quantize_model is oneDNN's already
    (BatchNorm, bias, residual add and ReLU fused into the int8 convolution)."""
    return quantize_model(sym, arg_params, aux_params, data_names, label_names, ctx,
                          excluded_sym_names, excluded_op_names, calib_mode, calib_data,
                          num_calib_examples, quantized_dtype, quantize_mode,
                          quantize_granularity, logger)


class LayerDataCollector:
    """quantize_graph's collector. MXNet's collectors keep every layer's output seen by a
    Module's monitor callback; kiln's calibration runs the float32 graph itself, so this one
    keeps the data the model was fed (the data variables, which a Module's executor reports
    to `collect` under their own names with monitor_all=True), and calib_graph calibrates
    on them."""

    def __init__(self, model, data_names, options):
        self.model, self.data_names, self.options = model, set(data_names), options
        self.batches, self._last = [], None
        self.include_layer = None

    def collect(self, name, arr):
        name = name.decode() if isinstance(name, bytes) else str(name)
        if name not in self.data_names:
            return
        value = _np.array(arr.asnumpy() if hasattr(arr, "asnumpy") else arr)
        # a variable is reported once per op reading it, and an executor refills one
        # input array batch after batch: the same values twice in a row are one batch
        if self._last is not None and self._last.shape == value.shape and \
                _np.array_equal(self._last, value):
            return
        self._last = value
        self.batches.append(value)


def _data_names(sym, arg_params, aux_params, head):
    known = set(arg_params or ()) | set(aux_params or ()) | ({head.label} if head else set())
    return [n for n in sym.list_arguments() if n not in known]


def quantize_graph(sym, arg_params, aux_params, ctx=None, excluded_sym_names=None,
                   excluded_op_names=None, calib_mode="entropy", quantized_dtype="int8",
                   quantize_mode="full", quantize_granularity="tensor-wise",
                   LayerOutputCollector=None, logger=None):
    """(qsym, qarg_params, aux_params, collector). With calib_mode 'naive' or 'entropy', feed
    the float32 model to a Module whose executor calls `collector.collect` (monitor_all=True)
    and give the collector to calib_graph; qsym meanwhile quantizes on each call's range."""
    _check_lists(excluded_sym_names, excluded_op_names)
    if LayerOutputCollector is not None:
        raise KilnError("quantize_graph: LayerOutputCollector is not supported by kiln (its "
                        "calibration runs the traced float32 graph itself)")
    _, head = split_loss_head(sym, [n for n in sym.list_arguments() if n.endswith("_label")])
    data_names = _data_names(sym, arg_params, aux_params, head)
    label_names = [head.label] if head else []
    options = dict(excluded_sym_names=excluded_sym_names, excluded_op_names=excluded_op_names,
                   quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
                   quantize_granularity=quantize_granularity, logger=logger)
    calib_mode = "none" if calib_mode is None else calib_mode
    collector = None
    if calib_mode != "none":
        collector = LayerDataCollector((sym, arg_params, aux_params, label_names),
                                       data_names, options)
    if calib_mode == "none" or declared_shapes(sym, data_names) is not None:
        qsym, qarg_params, qaux = _quantize(sym, arg_params, aux_params, data_names,
                                            label_names, calib_mode="none", calib_data=None,
                                            num_calib_examples=None, **options)
    else:       # no shape to trace before data comes: calib_graph builds the int8 model
        qsym, qarg_params, qaux = sym, dict(arg_params), dict(aux_params)
    return qsym, qarg_params, qaux, collector


def calib_graph(qsym, arg_params, aux_params, collector, calib_mode="entropy",
                quantized_dtype="int8", logger=None):
    """(qsym, qarg_params, aux_params) calibrated on the data `collector` saw. kiln builds it
    from the float32 model quantize_graph gave the collector (qsym is not read)."""
    if not isinstance(collector, LayerDataCollector):
        raise KilnError("calib_graph: the collector must be the one quantize_graph returned")
    if calib_mode not in ("naive", "entropy"):
        raise ValueError(f"unknown calibration mode {calib_mode} received, expected "
                         "`naive` or `entropy`")
    if not collector.batches:
        raise KilnError("calib_graph: the collector saw no data: run the float32 model in a "
                        "Module whose executor calls collector.collect (set_monitor_callback"
                        "(collector.collect, monitor_all=True)) on the calibration batches")
    sym, fp32_args, fp32_aux, label_names = collector.model
    options = dict(collector.options, quantized_dtype=quantized_dtype,
                   logger=logger or collector.options["logger"])
    return _quantize(sym, fp32_args, fp32_aux, sorted(collector.data_names), label_names,
                     calib_mode=calib_mode, calib_data=[[b] for b in collector.batches],
                     num_calib_examples=None, **options)
