"""MXNet 1.9's `mx.contrib.amp` (kiln.contrib.amp): bfloat16 mixed precision.

kiln runs mixed precision as a graph pass on what hybridize traces (graph/passes/amp.py):
the ops of the bfloat16 list run in bfloat16 (oneDNN's bfloat16 matmul: bfloat16 in,
float32 out), everything else in float32 (softmax, normalization statistics, losses,
reductions), and a training step keeps float32 master weights, gradients and optimizer.

    amp.init(target_dtype='bfloat16')           every block hybridized from now on
    amp.convert_hybrid_block(net, 'bfloat16')   one block (returned; converted in place)
    amp.convert_model(sym, args, auxs, 'bfloat16')  a symbol with its parameters (MXNet's
                                                Symbol flow: loaded as a SymbolBlock,
                                                converted, exported: symbol_models.py)
    amp.init_trainer(trainer); with amp.scale_loss(loss, trainer) as scaled: ...

The lists take MXNet's op names (FullyConnected, dot, batch_dot, ...) or kiln's primitive
names (matmul) and can be changed as in MXNet (target_precision_ops / target_dtype_ops,
fp32_ops, excluded_sym_names). After amp.init, eager code (not hybridized) runs the listed
ops in bfloat16 too, as MXNet's amp.init does for imperative calls. float16 is a GPU
format that kiln does not run: asking for it is an error that says so.
"""
import contextlib
import sys

import numpy as _np

from ..._core import autograd
from ..._core.base import KilnError
from ..._core.ndarray import ndarray
from ...gluon.block import HybridBlock
from ...gluon.trainer import Trainer
from ...graph.passes.amp import BF16_OPS
from ...graph.tree import unflatten
from ...hybrid.cached import set_precision_pipeline
from ...hybrid.precision import set_default_precision_pipeline
from .symbol_rewrite import amp_casts
from .symbol_models import as_block, as_symbol, declared_shapes, layer_weights, \
    split_loss_head

__all__ = ["init", "convert_hybrid_block", "convert_model", "convert_symbol", "init_trainer",
           "scale_loss", "unscale", "LossScaler",
           "list_lp16_ops", "list_fp32_ops", "list_conditional_fp32_ops", "BF16_FUNCS",
           "FP32_FUNCS", "CONDITIONAL_FP32_FUNCS"]

# MXNet's op names -> the kiln primitives they trace to
_MX_NAMES = {"FullyConnected": "matmul", "dot": "matmul", "batch_dot": "matmul",
             "linalg_gemm2": "matmul", "_npi_matmul": "matmul", "matmul": "matmul",
             "Convolution": "conv", "conv": "conv"}
# MXNet 1.9's lists (contrib/amp/lists/symbol_bf16.py), as kiln runs them
BF16_FUNCS = ["Convolution", "FullyConnected", "dot", "batch_dot"]
FP32_FUNCS = ["softmax", "log_softmax", "SoftmaxOutput", "LayerNorm", "BatchNorm",
              "InstanceNorm", "GroupNorm", "norm", "sum", "mean", "exp", "log",
              "Deconvolution", "RNN"]
CONDITIONAL_FP32_FUNCS = []

_state = {"initialized": False, "target": None}


def _target(target_dtype):
    name = getattr(target_dtype, "__name__", None) or str(target_dtype)
    if name == "bfloat16":
        return "bfloat16"
    if name == "float16":
        raise KilnError("amp: target_dtype float16 is a GPU format kiln does not run; kiln's "
                        "mixed precision runs bfloat16 on the CPU: target_dtype='bfloat16'")
    raise KilnError(f"amp: target_dtype must be 'bfloat16' (or float16 on a GPU), got "
                    f"{target_dtype!r}")


def _primitives(names, what):
    out = set()
    for name in names or ():
        prim = _MX_NAMES.get(name, name)
        if prim not in BF16_OPS and name not in FP32_FUNCS:
            raise KilnError(f"amp: {what} names {name!r}, which kiln cannot run in bfloat16 "
                            f"(it can: {', '.join(sorted(set(_MX_NAMES)))})")
        if prim in BF16_OPS:
            out.add(prim)
    return out


def _options(target_ops, fp32_ops, excluded_sym_names):
    allow = _primitives(BF16_FUNCS if target_ops is None else target_ops,
                        "target_precision_ops")
    deny = set(excluded_sym_names or ())
    for name in fp32_ops or ():
        deny.add(_MX_NAMES.get(name, name))
    return {"amp_allow": frozenset(allow - deny), "amp_deny": frozenset(deny)}


def init(target_dtype="bfloat16", target_precision_ops=None, conditional_fp32_ops=None,
         fp32_ops=None):
    """Every block hybridized after this runs the bfloat16 list in bfloat16."""
    _target(target_dtype)
    if conditional_fp32_ops:
        raise KilnError("amp: conditional_fp32_ops is not supported by kiln (no kiln op "
                        "changes precision on an attribute)")
    set_default_precision_pipeline("amp-bfloat16",
                                   **_options(target_precision_ops, fp32_ops, None))
    _state.update(initialized=True, target="bfloat16")


def convert_hybrid_block(block, target_dtype="bfloat16", target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None,
                         cast_optional_params=False):
    """`block` with its traced graphs in mixed precision (converted in place, returned).
    excluded_sym_names: names of graph nodes (see kiln.explain) kept in float32.
    A block already called is traced again on its last call's shapes (zeros, predict
    mode), so it exports at once, as MXNet's converted block does (its symbol has them)."""
    _target(target_dtype)
    if not isinstance(block, HybridBlock):
        raise KilnError(f"amp.convert_hybrid_block: expected a HybridBlock, got "
                        f"{type(block).__name__}")
    if conditional_fp32_ops:
        raise KilnError("amp: conditional_fp32_ops is not supported by kiln")
    example = _last_call(block)
    set_precision_pipeline(block, "amp-bfloat16",
                           **_options(target_dtype_ops, fp32_ops, excluded_sym_names))
    if example is not None:
        with autograd.predict_mode():
            block(*example)
    return block


def _last_call(block):
    """Zeros shaped as the hybridized block's latest call's inputs, or None."""
    cached = block.__dict__.get("_kiln_cached")
    if not getattr(block, "_hybrid_active", False) or cached is None or not cached.entries:
        return None
    structure, avals, _, _ = list(cached.entries)[-1]
    return unflatten(structure, [ndarray._wrap(_np.zeros(shape, dtype))
                                 for shape, dtype in avals])


def convert_model(sym, arg_params, aux_params, target_dtype="float16", target_dtype_ops=None,
                  fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                  cast_optional_params=False, data_names=None, data_shapes=None):
    """(symbol, arg_params, aux_params) of the model in mixed precision. The symbol holds
    kiln's bfloat16 ops (conv_bf16, matmul_bf16: bfloat16 operands, float32 out) where
    MXNet's holds amp_cast nodes; the parameters stay float32 (the bfloat16 kernels convert
    a weight once), so cast_optional_params changes nothing. kiln traces the model to
    convert it: the data shapes come from `data_shapes` or the data variables'
    `__shape__` attributes (the symbol's arguments that are neither parameters nor a loss
    head's label), and the result has those shapes. Without either, the graph is rewritten
    as MXNet's is (symbol_rewrite.amp_casts): amp_cast to bfloat16 before each listed op
    and back to float32 after it, for any shape bound later."""
    _target(target_dtype)
    if conditional_fp32_ops:
        raise KilnError("amp: conditional_fp32_ops is not supported by kiln")
    body, head = split_loss_head(sym, [n for n in sym.list_arguments()
                                       if n.endswith("_label")])
    known = set(arg_params or ()) | set(aux_params or ()) | ({head.label} if head else set())
    data_names = list(data_names or [n for n in sym.list_arguments() if n not in known])
    shapes = list(data_shapes) if data_shapes else declared_shapes(sym, data_names)
    if shapes is None:      # nothing to trace with: MXNet's way, amp_cast nodes in the graph
        _options(target_dtype_ops, fp32_ops, excluded_sym_names)     # the lists' checks
        return (amp_casts(sym, arg_params, BF16_FUNCS if target_dtype_ops is None else
                          target_dtype_ops, fp32_ops, excluded_sym_names),
                arg_params, aux_params)
    block = as_block(body, arg_params, aux_params, data_names)
    weights = layer_weights(sym, excluded_sym_names)
    convert_hybrid_block(block, target_dtype, target_dtype_ops, fp32_ops,
                         excluded_sym_names=list(excluded_sym_names or ()) + weights)
    return as_symbol(block, [_np.zeros(tuple(s), _np.float32) for s in shapes], head)


def convert_symbol(sym, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                   conditional_fp32_ops=None, excluded_sym_names=None, data_names=None,
                   cast_optional_params=False):
    """The symbol of convert_model, for a symbol without its parameters: the data variables
    must declare their shapes (`__shape__`); the parameters' shapes are inferred from them
    (their values do not change the converted graph)."""
    _target(target_dtype)
    arg_params, aux_params = _shaped_zeros(sym, data_names)
    return convert_model(sym, arg_params, aux_params, target_dtype, target_dtype_ops,
                         fp32_ops, conditional_fp32_ops, excluded_sym_names,
                         cast_optional_params, data_names)[0]


def _shaped_zeros(sym, data_names):
    from .. import nd
    _, head = split_loss_head(sym, [n for n in sym.list_arguments() if n.endswith("_label")])
    names = list(data_names or [n for n in sym.list_arguments() if not n.endswith(
        ("_weight", "_bias", "_gamma", "_beta", "_label"))])
    shapes = declared_shapes(sym, names)
    if shapes is None:
        raise KilnError("amp.convert_symbol: kiln converts a traced graph and needs the data's "
                        f"shape ({names}): declare it on the variable (mx.sym.var('data', "
                        "shape=(1, 3, 224, 224)))")
    arg_shapes, _, aux_shapes = sym.infer_shape(**dict(zip(names, shapes)))
    skip = set(names) | ({head.label} if head else set())
    args = {n: nd.zeros(s) for n, s in zip(sym.list_arguments(), arg_shapes) if n not in skip}
    auxs = {n: nd.zeros(s) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, auxs


class LossScaler:
    """A dynamic loss scale (MXNet's): halved when gradients overflow, doubled after
    `scale_window` clean steps. bfloat16 has float32's range: its scale stays 1."""

    def __init__(self, init_scale=1.0, scale_window=2000):
        self.loss_scale, self.scale_window, self._clean = float(init_scale), scale_window, 0

    def update(self, overflow):
        if overflow:
            self.loss_scale = max(self.loss_scale / 2.0, 1.0)
            self._clean = 0
        else:
            self._clean += 1
            if self._clean >= self.scale_window and self.loss_scale < 2.0 ** 24:
                self.loss_scale *= 2.0
                self._clean = 0


def init_trainer(optimizer_or_trainer):
    """Give a gluon Trainer its loss scaler (amp.scale_loss reads it)."""
    if not _state["initialized"] and not isinstance(optimizer_or_trainer, Trainer):
        raise KilnError("amp.init_trainer: AMP not initialized, call amp.init() first")
    if not isinstance(optimizer_or_trainer, Trainer):
        raise KilnError("amp.init_trainer: AMP works with a gluon Trainer, got "
                        f"{type(optimizer_or_trainer).__name__}")
    optimizer_or_trainer._amp_loss_scaler = LossScaler()
    optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Yield the loss times the scale; the trainer divides the gradients by it."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise KilnError("amp.scale_loss: the loss scaler is not initialized, did you forget "
                        "to call amp.init_trainer()?")
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [x * scaler.loss_scale for x in loss]
    else:
        yield loss * scaler.loss_scale


def unscale(optimizer_or_trainer):
    """Divide the gradients by the loss scale now (before clipping them, say)."""
    trainer = optimizer_or_trainer
    for p in trainer._params:
        if p.grad_req != "null":
            g = p.grad()
            g[:] = g * trainer._scale
    trainer._scale = 1.0


def list_lp16_ops(target_dtype):
    """MXNet's names of the ops AMP runs in bfloat16 (the allow list)."""
    _target(target_dtype)
    return list(BF16_FUNCS)


def list_fp32_ops(target_dtype):
    """MXNet's names of the ops AMP keeps in float32."""
    _target(target_dtype)
    return list(FP32_FUNCS)


def list_conditional_fp32_ops(target_dtype):
    """MXNet's ops kept in float32 on some attribute values (kiln refuses this list in init)."""
    _target(target_dtype)
    return list(CONDITIONAL_FP32_FUNCS)

# MXNet's mxnet.contrib.amp is a package whose module `amp` holds this API, and code imports it
# as `from mxnet.contrib.amp import amp`; kiln keeps both in this one module
amp = sys.modules[__name__]
