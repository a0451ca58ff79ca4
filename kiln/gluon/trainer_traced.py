"""Trainer.step inside a traced function: the optimizer update becomes part of the graph.

This is what lets `kiln.hybridize(step)` compile a whole training step (forward, backward
and update) into one program that updates parameters and optimizer state in place.

Each parameter's update runs the optimizer's own `apply` (operators only) on symbols: the
weight, its traced gradient, and StateVars wrapping the optimizer's NumPy state buffers.
The per-step scalars (learning rate from the schedule, step count, bias corrections) are
not baked into the graph: a hook computes them in Python before every call, with the same
`scalars` function the eager path uses, and writes them into a small StateVar the graph
reads. The optimizer's configuration (momentum, betas, whether weight decay is on, clipping)
is fixed when the step is traced.
"""
import numpy as _np

from .._core.base import KilnError
from .._core import trace
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
    rescale = trainer._scale / batch_size
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
        g = preprocess_grad(grad, sym[len(keys)], opt.clip_gradient)
        opt.apply(weight, g, sym_state, s)
        ctx.pre_call.append(_refresher(opt, i, keys, buf, rescale))


def _refresher(opt, i, keys, buf, rescale):
    def refresh():
        t = opt._update_count(i)
        s = opt.scalars(opt._get_lr(i), opt._get_wd(i), t)
        for j, k in enumerate(keys):
            buf[j] = s[k]
        buf[len(keys)] = rescale
        opt.rescale_grad = rescale
    return refresh
