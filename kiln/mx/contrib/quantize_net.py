"""MXNet 1.9's `mx.contrib.quantization.quantize_net` / `quantize_net_v2` for Gluon
blocks (kiln.contrib.quantization): int8 inference. The Symbol flow (quantize_model,
quantize_graph) is a front end onto `quantize_in_place` (quantization_symbol.py).

The network is traced once; its Dense and convolution layers (graph/passes/quantize.py)
get their weights quantized once, per output channel, and their input activations a
scale from calibration on the traced graph (kiln/hybrid/calibrate.py):
  calib_mode='naive'    max |x| over the calibration batches
  calib_mode='entropy'  the threshold closest to the float distribution in KL divergence
  calib_mode='none'     dynamic quantization: each call's own max |x| (no calib_data)
quantized_dtype: the activations' int8 type: 'int8', 'uint8' (a layer whose calibrated
input goes below zero stays int8), or 'auto' (uint8 where the input is nonnegative, as
after ReLU). quantize_mode 'full' quantizes every layer not excluded; 'smart' also leaves
in float32 the layers whose reduction is too short for int8 to pay (fewer than
SMART_MIN_REDUCTION inputs per output: the first convolution of an RGB image).
exclude_layers names layers (a Dense or Conv block's structural name, `features.0`),
exclude_layers_match patterns (regular expressions) of those names, exclude_operators
MXNet op names ('FullyConnected', 'Convolution').

As in MXNet, a SymbolBlock of the quantized graph is returned (the network exported and
loaded again: its int8 weights and scales are constants of the symbol); and, unlike
MXNet, the network itself is converted in place too: every graph it traces from now on
runs its layers in int8 (hybridize it to compile them; export writes the int8 graph).
"""
import os
import re
import tempfile

import numpy as _np

from ..._core.base import KilnError
from ..._core.ndarray import ndarray
from ..._core import autograd
from ...gluon.block import HybridBlock
from ...gluon.symbol_block import SymbolBlock
from ...graph.capture import capture
from ...hybrid import calibrate
from ...hybrid.cached import _structural_names, set_precision_pipeline

__all__ = ["quantize_net", "quantize_net_v2", "quantize_in_place", "layer_of",
           "SMART_MIN_REDUCTION"]

SMART_MIN_REDUCTION = 32
_OPERATORS = {"matmul": "FullyConnected", "conv": "Convolution"}


def _batches(calib_data, limit_batches, limit_examples):
    """The calibration batches as lists of NumPy inputs."""
    out, seen = [], 0
    if calib_data is None:
        return out
    if hasattr(calib_data, "reset") and hasattr(calib_data, "next"):    # an mx.io DataIter
        calib_data.reset()
        source = (b.data for b in calib_data)
    else:
        source = iter(calib_data)
    for batch in source:
        if isinstance(batch, (list, tuple)):
            data = batch[0] if not isinstance(batch[0], (list, tuple)) else batch[0][0]
        else:
            data = batch
        x = data.asnumpy() if isinstance(data, ndarray) else _np.asarray(data)
        out.append([x.astype(_np.float32, copy=False)])
        seen += x.shape[0]
        if (limit_batches is not None and len(out) >= limit_batches) or (
                limit_examples is not None and seen >= limit_examples):
            break
    return out


def layer_of(weight_name):
    """The layer a weight parameter belongs to, as exclude_layers names it: a Gluon block's
    structural name (`features.0` of `features.0.weight`), else the parameter's own name."""
    return weight_name.rsplit(".", 1)[0] if "." in weight_name else weight_name


def _excluded(weight_name, op, exclude_layers, exclude_layers_match, exclude_operators):
    layer = layer_of(weight_name)
    if exclude_operators and _OPERATORS[op] in exclude_operators:
        return True
    if exclude_layers and layer in exclude_layers:
        return True
    return any(re.search(p, layer) for p in exclude_layers_match or ())


def quantize_net_v2(network, quantized_dtype="auto", quantize_mode="full",
                    quantize_granularity="channel-wise", exclude_layers=None,
                    exclude_layers_match=None, exclude_operators=None, calib_data=None,
                    data_shapes=None, calib_mode="none", num_calib_examples=None, ctx=None,
                    LayerOutputCollector=None, logger=None, num_calib_batches=None):
    """`network` (a HybridBlock) with its Dense and convolution layers in int8."""
    example = quantize_in_place(network, quantized_dtype, quantize_mode,
                                quantize_granularity, exclude_layers, exclude_layers_match,
                                exclude_operators, calib_data, data_shapes, calib_mode,
                                num_calib_examples, LayerOutputCollector, num_calib_batches)
    return _symbol_block(network, example)


def quantize_in_place(network, quantized_dtype="auto", quantize_mode="full",
                      quantize_granularity="channel-wise", exclude_layers=None,
                      exclude_layers_match=None, exclude_operators=None, calib_data=None,
                      data_shapes=None, calib_mode="none", num_calib_examples=None,
                      LayerOutputCollector=None, num_calib_batches=None):
    """quantize_net_v2's work on `network` itself (its precision pipeline set to int8 with
    the chosen layers); returns the inputs it traced with (NumPy)."""
    if not isinstance(network, HybridBlock):
        raise KilnError(f"quantize_net: expected a HybridBlock, got {type(network).__name__}")
    if quantized_dtype not in ("int8", "uint8", "auto"):
        raise KilnError(f"quantize_net: quantized_dtype must be 'int8', 'uint8' or 'auto', "
                        f"got {quantized_dtype!r}")
    if quantize_mode not in ("full", "smart"):
        raise KilnError(f"quantize_net: quantize_mode must be 'full' or 'smart', got "
                        f"{quantize_mode!r}")
    if calib_mode not in ("naive", "entropy", "none"):
        raise KilnError(f"quantize_net: calib_mode must be 'naive', 'entropy' or 'none', got "
                        f"{calib_mode!r}")
    if quantize_granularity not in ("channel-wise", "tensor-wise"):
        raise KilnError("quantize_net: quantize_granularity must be 'channel-wise' or "
                        f"'tensor-wise', got {quantize_granularity!r}")
    if LayerOutputCollector is not None:
        raise KilnError("quantize_net: LayerOutputCollector is not supported by kiln")
    batches = _batches(calib_data, num_calib_batches, num_calib_examples)
    if calib_mode != "none" and not batches:
        raise KilnError(f"quantize_net: calib_mode={calib_mode!r} needs calib_data")
    if batches:
        example = batches[0]
    elif data_shapes:
        example = [_np.zeros(getattr(d, "shape", d[1] if isinstance(d, (list, tuple))
                                     and len(d) == 2 and not isinstance(d[0], int) else d),
                             _np.float32) for d in data_shapes]
    else:
        raise KilnError("quantize_net: give calib_data or data_shapes (to trace the network)")
    set_precision_pipeline(network, None)
    cap = capture(network, tuple(ndarray._wrap(x) for x in example), type(network).__name__,
                  _structural_names(network))
    graph = cap.graph
    params = {p.name: cap.params[id(p)] for p in graph.params}
    chosen = []
    for name, node in calibrate.layer_inputs(graph):
        w = node.inputs[1].inputs[0] if node.op == "matmul" else node.inputs[1]
        reduction = int(_np.prod(w.shape[1:]))
        if _excluded(name, node.op, exclude_layers, exclude_layers_match, exclude_operators):
            continue
        if quantize_mode == "smart" and reduction < SMART_MIN_REDUCTION:
            continue
        chosen.append((name, node))
    values = [params[p.name].data().asnumpy() for p in graph.params]
    stats = calibrate.collect(graph, values, batches, calib_mode == "entropy") \
        if calib_mode != "none" else {}
    folds = calibrate.conv_folds(graph, values)
    layers = {}
    for name, node in chosen:
        weight = params[name].data().asnumpy()
        spec = {"x_scale": None, "dtype": "int8" if quantized_dtype != "uint8" else "uint8"}
        if name in folds:       # a convolution: its bias and BatchNorm folded in
            weight, spec["bias"], spec["affine"] = folds[name]
        spec["weight"] = calibrate.quantize_weight(weight, quantize_granularity ==
                                                   "channel-wise")
        if calib_mode != "none":
            s = stats[name]
            unsigned = quantized_dtype in ("uint8", "auto") and s.min >= 0
            spec["dtype"] = "uint8" if unsigned else "int8"
            # the network's own input keeps its whole range: its values are the data's
            # (few distinct levels, such as pixels), which KL clipping would cut
            data_input = any(node.inputs[0] is x for x in graph.inputs)
            threshold = (calibrate.entropy_threshold(s) if calib_mode == "entropy"
                         and not data_input else calibrate.naive_threshold(s))
            spec["x_scale"] = float(max(threshold, 1e-12) / (255.0 if unsigned else 127.0))
        elif quantized_dtype == "uint8":
            spec["dtype"] = "int8"      # a dynamic scale is symmetric
        layers[name] = spec
    set_precision_pipeline(network, "int8", int8_layers=layers)
    network._kiln_quantized_layers = sorted(layers)
    return example


def _symbol_block(network, example):
    """MXNet's return value: the quantized network as a SymbolBlock (exported, loaded).
    Its inputs' leading axis is symbolic: like MXNet's, it takes any batch size, not only
    the calibration batch's."""
    if not getattr(network, "_hybrid_active", False):
        network.hybridize()
    with autograd.predict_mode():
        network(*[ndarray._wrap(x) for x in example])
    batch = {k: {0: "batch"} for k, x in enumerate(example) if _np.ndim(x)}
    with tempfile.TemporaryDirectory(prefix="kiln-quantized-") as tmp:
        sym, params = network.export(os.path.join(tmp, "quantized"), dynamic_axes=batch)
        return SymbolBlock.imports(sym, None, params)


def quantize_net(network, quantized_dtype="auto", quantize_mode="full", exclude_layers=None,
                 exclude_layers_match=None, exclude_operators=None, calib_data=None,
                 data_shapes=None, calib_mode="none", num_calib_examples=None, ctx=None,
                 logger=None, num_calib_batches=None):
    """MXNet's quantize_net: quantize_net_v2 with channel-wise weight scales."""
    return quantize_net_v2(network, quantized_dtype, quantize_mode, "channel-wise",
                           exclude_layers, exclude_layers_match, exclude_operators,
                           calib_data, data_shapes, calib_mode, num_calib_examples, ctx,
                           None, logger, num_calib_batches)
