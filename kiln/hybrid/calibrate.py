"""Calibration for int8 quantization: the ranges of the activations entering a traced
graph's layers (kiln.contrib.quantization), and the per-channel quantization of weights.

`conv_folds` folds the per-channel affine ops after each convolution (its bias, an
inference BatchNorm) into its weight and bias, before they are quantized.
`layer_inputs(graph)` names the quantizable layers (graph/passes/quantize.py finds them)
by their weight parameter; `collect` runs the float32 graph on the NumPy executor over
calibration batches and keeps, per layer, the min and max of its input and a histogram of
its nonzero |x|; `naive_threshold` is max|x|, `entropy_threshold` the clipping threshold whose int8
distribution is closest to the float one in KL divergence (the TensorRT/MXNet method).
"""
import numpy as _np

from .._core.ir import Graph
from ..backend.numpy_exec import NumpyProgram
from ..graph.passes.quantize import _Constants, conv_chain, fold_affine, layer_weight, users_of

HISTOGRAM_BINS = 2048
QUANTIZED_BINS = 128        # |x| onto int8's 0..127


def layer_inputs(graph):
    """[(weight parameter name, the layer node)] of the quantizable layers, in graph order."""
    out = []
    for n in graph.nodes:
        w = layer_weight(n)
        if w is not None:
            out.append((w.name, n))
    return out


class Stats:
    def __init__(self):
        self.min, self.max, self.hist, self.top = _np.inf, -_np.inf, None, None


def collect(graph, param_values, batches, histograms):
    """{weight name: Stats} over `batches` (lists of NumPy inputs). histograms: also the
    histogram of |x| over [0, max|x| of all batches] (a second pass over the batches)."""
    layers = layer_inputs(graph)
    probe = NumpyProgram(Graph(graph.inputs, graph.params, [n.inputs[0] for _, n in layers],
                               graph.name + "_calibration"))
    stats = {name: Stats() for name, _ in layers}
    for batch in batches:
        for (name, _), x in zip(layers, probe(batch, param_values)):
            s = stats[name]
            s.min, s.max = min(s.min, float(x.min())), max(s.max, float(x.max()))
    if histograms:
        for s in stats.values():
            s.top = max(abs(s.min), abs(s.max), 1e-12)
            s.hist = _np.zeros(HISTOGRAM_BINS, _np.int64)
        for batch in batches:
            for (name, _), x in zip(layers, probe(batch, param_values)):
                s = stats[name]
                # exact zeros (half of a ReLU's outputs) are exact at every scale: they say
                # nothing about where to clip, and as one tall bin they would pull the
                # threshold far down
                s.hist += _np.histogram(_np.abs(x[x != 0]), HISTOGRAM_BINS, (0.0, s.top))[0]
    return stats


def naive_threshold(s):
    return max(abs(s.min), abs(s.max))


def _smoothed(p, eps=1e-4):
    """p with eps moved onto its zero bins (so KL(p || q) is finite where q is zero)."""
    zeros = p == 0
    n_zero, n_nonzero = int(zeros.sum()), int((~zeros).sum())
    if n_nonzero == 0:
        return None
    take = eps * n_zero / n_nonzero
    out = p.astype(_np.float64)
    out[zeros] = eps
    out[~zeros] -= take
    return out if (out > 0).all() else None


def entropy_threshold(s):
    """The threshold minimizing KL(reference || quantized) over thresholds from
    QUANTIZED_BINS bins up to all of them (max|x|)."""
    hist = s.hist.astype(_np.float64)
    if hist.sum() == 0:
        return naive_threshold(s)
    width = s.top / HISTOGRAM_BINS
    best, best_kl = HISTOGRAM_BINS, _np.inf
    for i in range(QUANTIZED_BINS, HISTOGRAM_BINS + 1, 8):
        p = hist[:i].copy()
        p[-1] += hist[i:].sum()                     # clipped values land on the edge
        nonzero = hist[:i] != 0
        # merge the i bins into QUANTIZED_BINS, spread each back over its nonzero bins
        edges = _np.linspace(0, i, QUANTIZED_BINS + 1).astype(int)
        q = _np.zeros(i)
        for a, b in zip(edges[:-1], edges[1:]):
            total, count = hist[a:b].sum(), nonzero[a:b].sum()
            if count:
                q[a:b][nonzero[a:b]] = total / count
        ps, qs = _smoothed(p), _smoothed(q)
        if ps is None or qs is None:
            continue
        ps, qs = ps / ps.sum(), qs / qs.sum()
        kl = float(_np.sum(ps * _np.log(ps / qs)))
        if kl < best_kl:
            best, best_kl = i, kl
    return (best + 0.5) * width


def quantize_weight(w, channel_wise=True):
    """(int8 weight, float32 scales (out channels,)): symmetric, max|w| -> 127, per output
    channel (or one scale for the tensor)."""
    w = _np.asarray(w, _np.float32)
    flat = _np.abs(w.reshape(w.shape[0], -1))
    top = flat.max(axis=1) if channel_wise else _np.full(w.shape[0], flat.max())
    scale = _np.where(top > 0, top / 127.0, 1.0).astype(_np.float32)
    shape = (-1,) + (1,) * (w.ndim - 1)
    q = _np.clip(_np.rint(w / scale.reshape(shape)), -127, 127).astype(_np.int8)
    return q, scale


def conv_folds(graph, param_values):
    """{weight name: (weight, bias, number of ops folded)}: each conv layer's weight and
    bias with the affine ops after it (graph/passes/quantize.py's conv_chain) folded in:
    conv(x, w) * scale + shift = conv(x, w * scale) + shift, per output channel."""
    _, _, sole_user = users_of(graph)
    constant = _Constants()
    chains = []
    for name, node in layer_inputs(graph):
        if node.op == "conv":
            chains.append((name, node, conv_chain(node, sole_user, constant)[0]))
    operands = [other for _, _, affine in chains for _, other in affine]
    values = NumpyProgram(Graph([], graph.params, operands, graph.name + "_folding"))(
        [], param_values) if operands else []
    out, k = {}, 0
    for name, node, affine in chains:
        w = _np.asarray(param_values[[p.name for p in graph.params].index(name)], _np.float64)
        scale, shift = fold_affine(values[k:k + len(affine)], [a.op for a, _ in affine],
                                   node.shape[1])
        k += len(affine)
        folded = (w * scale.reshape((-1,) + (1,) * (w.ndim - 1))).astype(_np.float32)
        out[name] = (folded, shift.astype(_np.float32), len(affine))
    return out
