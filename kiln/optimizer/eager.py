"""The base of the optimizers that run eagerly only: MXNet 1.9.1's Adamax and Nadam
(adam.py), Ftrl and FTML (adaptive.py), LAMB, LARS and LBSGD (large_batch.py), Signum,
SGLD and DCASGD (sgd.py), and MXNet's Test optimizer (here). Each keeps MXNet's arithmetic
and order of operations (some rescale, add weight decay, then clip; others clip before
weight decay), checked against MXNet 1.9.1's updates on fixed inputs
(tests/mx/test_mxnet_optimizers.py).

They update NumPy buffers in place, eagerly. A compiled training step (kiln.hybridize of a
step that calls Trainer.step) needs the operator-only `apply` form that sgd/adam have; these
raise a clear error there.
"""
import numpy as _np

from .._core.base import KilnError
from .._core import aligned
from .base import Optimizer, register


def _clip(g, bound):
    return g if bound is None or bound < 0 else _np.clip(g, -bound, bound)


def _zeros(weight, n):
    return tuple(aligned.zeros(weight.shape, weight.dtype) for _ in range(n))


class _Eager(Optimizer):
    """update() hands each family the raw gradient; it applies rescale, clip and weight
    decay in MXNet's order for that family (`mx_update`)."""

    def _update_one(self, index, weight, grad, state, t):
        self.mx_update(index, weight, grad.astype(weight.dtype, copy=False), state,
                       self._get_lr(index), self._get_wd(index), t)

    def scalars(self, lr, wd, t):
        raise KilnError(f"optimizer {type(self).__name__} runs eagerly only: a compiled "
                        "training step needs sgd, nag, adam, adamw, adagrad, rmsprop or "
                        "adadelta")

    def _rescaled(self, grad):
        return grad * self.rescale_grad


@register
class Test(_Eager):
    """MXNet's test optimizer: w += rescale_grad * g; the state holds the new weight."""

    def create_state(self, index, weight):
        return _zeros(weight, 1)[0]

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        weight += self._rescaled(grad)
        state[...] = weight
