"""Trainer.step inside a traced function: the optimizer update becomes part of the graph.

This is what lets `kiln.hybridize(step)` compile a whole training step (forward, backward
and update) into one program that updates parameters and optimizer state in place.

Each parameter's update runs the optimizer's own `apply` (operators only) on symbols: the
weight, its traced gradient, and StateVars wrapping the optimizer's NumPy state buffers.
The per-step scalars (learning rate from the schedule, step count, bias corrections) are
not baked into the graph: a hook computes them in Python before every call, with the same
`scalars` function the eager path uses, and writes them into a small StateVar the graph
reads. The optimizer's configuration (momentum, betas, whether weight decay is on, clipping)
is fixed when the step is traced. A batch size that is a symbolic size (the step traced
with its batch symbolic, so that an epoch's last, smaller batch runs the same program)
makes the gradients' rescale a value of the graph, computed from the call's batch.
"""
import numpy as _np

from .. import np as _knp
from .._core.base import KilnError
from .._core import trace
from .._core.symdim import SymInt
from ..graph.state import StateVar
from ..optimizer.base import preprocess_grad


def _state_vars(trainer, i, weight):
    """StateVars over parameter i's optimizer state, made once and kept on the trainer."""
    cache = trainer.__dict__.setdefault("_traced_state", {})
    hit = cache.get(i)
    if hit is None:
        if i not in trainer._states:
            trainer._states[i] = trainer._optimizer.create_state(i, weight)
        arrays = trainer._optimizer.state_arrays(trainer._states[i])
        vars_ = [StateVar(a, f"trainer.{trainer._names[i]}.state{k}")
                 for k, a in enumerate(arrays)]
        hit = cache[i] = (trainer._states[i], vars_)
    elif hit[0] is not trainer._states[i]:
        raise KilnError(f"Trainer: the optimizer state of {trainer._names[i]!r} was replaced "
                        "after a training step was compiled; compile the step again")
    return hit


def _restructure(state, arrays):
    if state is None:
        return None
    if isinstance(state, (list, tuple)):
        return type(state)(arrays)
    return arrays[0]


def update_traced(trainer, batch_size):
    opt = trainer._optimizer
    ctx = trace.current()
    # the rescale a hook writes before every call, or for a symbolic batch, the graph's
    in_graph = _rescale_in_graph(trainer._scale, batch_size) \
        if isinstance(batch_size, SymInt) else None
    rescale = None if in_graph is not None else trainer._scale / batch_size
    for i, (name, param) in enumerate(zip(trainer._names, trainer._params)):
        if getattr(param, "grad_req", "write") == "null":
            continue
        if param.grad_req == "add":
            raise KilnError(f"Trainer.step in a compiled step: parameter {name!r} has "
                            "grad_req='add', which a compiled step does not support")
        weight = param.data()
        grad = param.grad()
        if getattr(trainer, "_distributed", False):   # averaged over ranks by allreduce_grads
            from ..distributed.trainer import traced_grad
            grad = traced_grad(trainer, i, param)
        eager_weight = param._data._data
        state, vars_ = _state_vars(trainer, i, eager_weight)
        sym_state = _restructure(state, [v.data() for v in vars_])
        keys = list(opt.scalars(opt.learning_rate, 0.0, 1))
        buf = _np.zeros(len(keys) + 1, dtype=eager_weight.dtype)
        scal = StateVar(buf, f"trainer.{name}.scalars")
        sym = scal.data()
        s = {k: sym[j] for j, k in enumerate(keys)}
        g = preprocess_grad(grad, sym[len(keys)] if in_graph is None else
                            in_graph.astype(eager_weight.dtype), opt.clip_gradient)
        opt.apply(weight, g, sym_state, s)
        ctx.pre_call.append(_refresher(opt, i, keys, buf, rescale))


def _rescale_in_graph(scale, batch_size):
    """scale / batch_size in float64 as a graph value, for a symbolic batch size: the
    batch's value is the sum of that many ones (exact in float64), so the quotient is the
    one Python computes eagerly, and rounds to the weight's dtype as eager's does."""
    return scale / _knp.ones((batch_size,), dtype="float64").sum()


def _refresher(opt, i, keys, buf, rescale):
    def refresh():
        t = opt._update_count(i)
        s = opt.scalars(opt._get_lr(i), opt._get_wd(i), t)
        for j, k in enumerate(keys):
            buf[j] = s[k]
        if rescale is not None:      # (a symbolic batch's is computed in the graph)
            buf[len(keys)] = rescale
            opt.rescale_grad = rescale
    return refresh
