"""Gluon blocks with parameters called on Symbols build MXNet's symbol graph, as MXNet 1.x's
hybrid_forward(F=symbol) does: each parameter is a variable named as collect_params() of
the outermost block called names it ('dense0_weight'; structural names for blocks made
outside a name scope), and each layer becomes the MXNet op its hybrid_forward calls, named
prefix + 'fwd' in a named block ('test_fwd'; 'test_tanh_fwd' for Dense's activation).

A SymbolBlock gives its own symbol with the inputs replaced. Otherwise, in order: a builder
here for kiln's built-in layers (which compute with npx, not with F); a block's own
MXNet-style hybrid_forward, called with F = sym; a block without parameters of its own
(HybridSequential, a composite) runs its forward on the Symbols, so its children come back
here one by one.
"""
import contextlib
import threading

from ...gluon import loss, nn
from ...gluon.block import HybridBlock

_local = threading.local()


@contextlib.contextmanager
def parameter_names(block):
    """Inside: parameters resolve to variables named by `block`'s collect_params() (the
    outermost block called on Symbols decides; nested calls reuse its names)."""
    if getattr(_local, "names", None) is not None:
        yield
        return
    _local.names = {id(p): name for name, p in block.collect_params().items()}
    _local.vars = {}
    try:
        yield
    finally:
        _local.names = _local.vars = None


def variable(param):
    """The Symbol variable of a Parameter (one per parameter within one build)."""
    from . import var
    hit = _local.vars.get(id(param))
    if hit is None:
        name = _local.names.get(id(param)) or param.name
        shape = tuple(int(d or 0) for d in param.shape) if param.shape is not None else None
        hit = _local.vars[id(param)] = var(name, shape=shape, dtype=param.dtype)
    return hit


def _name(block, suffix="fwd"):
    prefix = getattr(block, "prefix", "") or ""
    return prefix + suffix if prefix else None


def _dense(block, x):
    from . import Activation, FullyConnected
    bias = variable(block.bias) if block.bias is not None else None
    y = FullyConnected(x, variable(block.weight), bias, num_hidden=block._units,
                       no_bias=bias is None, flatten=block._flatten, name=_name(block))
    if block.act is not None:
        act = block.act._act_type
        y = Activation(y, act_type=act, name=_name(block, f"{act}_fwd"))
    return y


def _conv(block, x):
    from . import Activation, Convolution, Deconvolution
    bias = variable(block.bias) if block.bias is not None else None
    attrs = dict(kernel=block._kernel, stride=block._strides, dilate=block._dilation,
                 pad=block._padding, num_filter=block._channels, num_group=block._groups,
                 no_bias=bias is None, layout=block._layout, name=_name(block))
    if block._transposed:
        y = Deconvolution(x, variable(block.weight), bias, adj=block._output_padding, **attrs)
    else:
        y = Convolution(x, variable(block.weight), bias, **attrs)
    if block.act is not None:
        act = block.act._act_type
        y = Activation(y, act_type=act, name=_name(block, f"{act}_fwd"))
    return y


def _activation(block, x):
    from . import Activation
    return Activation(x, act_type=block._act_type, name=_name(block))


def _flatten(block, x):
    from . import Flatten
    return Flatten(x, name=_name(block))


def _pool(block, x):
    from . import Pooling
    return Pooling(x, kernel=block._kernel, pool_type=block._pool_type,
                   stride=block._strides, pad=block._padding, global_pool=block._global,
                   pooling_convention="full" if block._ceil_mode else "valid",
                   count_include_pad=block._count_include_pad, layout=block._layout,
                   name=_name(block))


def _batch_norm(block, x):
    from . import BatchNorm
    return BatchNorm(x, variable(block.gamma), variable(block.beta),
                     variable(block.running_mean), variable(block.running_var),
                     eps=block._epsilon, momentum=block._momentum, axis=block._axis,
                     fix_gamma=not block._scale, use_global_stats=block._use_global_stats,
                     name=_name(block))


def _embedding(block, x):
    from . import Embedding
    return Embedding(x, variable(block.weight), input_dim=block._input_dim,
                     output_dim=block._output_dim, name=_name(block))


def _weighted_batch_mean(block, loss, sample_weight, weight):
    """MXNet's _apply_weighting, then the mean over all axes but the batch axis."""
    from . import broadcast_mul, mean
    if sample_weight is not None:
        loss = broadcast_mul(loss, sample_weight)
    if weight is not None:
        loss = loss * weight
    return mean(loss, axis=block._batch_axis, exclude=True)


def _softmax_cross_entropy(block, pred, label, sample_weight=None):
    from . import log_softmax, pick, reshape_like, sum as sym_sum
    if not block._from_logits:
        pred = log_softmax(pred, axis=block._axis)
    if block._sparse_label:
        loss = -pick(pred, label, axis=block._axis, keepdims=True)
    else:
        loss = -sym_sum(pred * reshape_like(label, pred), axis=block._axis, keepdims=True)
    return _weighted_batch_mean(block, loss, sample_weight, block._weight)


def _l2(block, pred, label, sample_weight=None):
    from . import reshape_like, square
    loss = square(reshape_like(label, pred) - pred)
    weight = block._weight / 2 if block._weight is not None else 0.5
    return _weighted_batch_mean(block, loss, sample_weight, weight)


def _l1(block, pred, label, sample_weight=None):
    from . import abs as sym_abs, reshape_like
    loss = sym_abs(reshape_like(label, pred) - pred)
    return _weighted_batch_mean(block, loss, sample_weight, block._weight)


def _symbol_block(block, *args):
    """A SymbolBlock called on Symbols: its symbol with the inputs replaced (MXNet's
    compose); its parameters keep their variables."""
    return block._sym(**dict(zip(block._inputs, args)))


BUILDERS = {nn.Dense: _dense, nn.Conv1D: _conv, nn.Conv2D: _conv, nn.Conv3D: _conv,
            nn.Conv1DTranspose: _conv, nn.Conv2DTranspose: _conv, nn.Conv3DTranspose: _conv,
            nn.BatchNorm: _batch_norm, nn.Embedding: _embedding, nn.Activation: _activation,
            nn.conv_layers._Pool: _pool, nn.Flatten: _flatten,
            loss.SoftmaxCrossEntropyLoss: _softmax_cross_entropy, loss.L2Loss: _l2,
            loss.L1Loss: _l1}


def register_builder(block_class, fn):
    """Blocks of `block_class` (and its subclasses) called on Symbols give fn(block, *args):
    how a floor above kiln/mx/sym adds its blocks (kiln/mx/rnn: the recurrent cells)."""
    BUILDERS[block_class] = fn


def build(block, args, has_params):
    """The Symbol of `block(*args)`, or None when none of the ways applies (a block without
    parameters and without a builder: block_call.py runs it as one node)."""
    from .symbol_block import MXSymbolBlock
    if isinstance(block, MXSymbolBlock):
        return _symbol_block(block, *args)
    builder = next((BUILDERS[c] for c in type(block).__mro__ if c in BUILDERS), None)
    with parameter_names(block):
        if builder is not None:
            return builder(block, *args)
        if not has_params:
            if not block._children:
                return None
            try:    # a container of layers: its children build their ops
                return block.forward(*args)
            except Exception:   # noqa: BLE001 - a forward that needs arrays: one node
                return None
        if type(block).hybrid_forward is not HybridBlock.hybrid_forward:
            from .. import sym
            params = {key: variable(p) for key, p in block._reg_params.items()}
            return block.hybrid_forward(sym, *args, **params)
        if not len(block._reg_params):
            return block.forward(*args)
    return None
