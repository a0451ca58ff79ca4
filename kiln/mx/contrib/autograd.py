"""MXNet's `mx.contrib.autograd`: the autograd API of MXNet 0.11 (train_section,
mark_variables, grad_and_loss, ...), on kiln.autograd."""
import functools

from ..._core import autograd as _ag
from ..._core.base import KilnError


def set_is_training(is_train):
    """Turn recording and training mode on or off together; returns the previous mode."""
    prev = _ag.set_training(is_train)
    _ag.set_recording(is_train)
    return prev


class TrainingStateScope:
    def __init__(self, enter_state):
        self._enter_state, self._prev = enter_state, None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, *exc):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """`with train_section():` records for autograd, in training mode."""
    return TrainingStateScope(True)


def test_section():
    return TrainingStateScope(False)


mark_variables = _ag.mark_variables


def backward(outputs, out_grads=None, retain_graph=False):
    if not isinstance(outputs, (list, tuple)):
        raise KilnError("contrib.autograd.backward: outputs must be a list or tuple of "
                        f"arrays, got {type(outputs).__name__}")
    _ag.backward(list(outputs), out_grads, retain_graph=retain_graph)


def compute_gradient(outputs):
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """A function returning (gradients of func's output w.r.t. the chosen arguments,
    func's output)."""
    @functools.wraps(func)
    def wrapped(*args):
        chosen = args if argnum is None else [
            args[i] for i in (argnum if isinstance(argnum, list) else [argnum])]
        for x in chosen:
            x.attach_grad()
        with train_section():
            outputs = func(*args)
        compute_gradient(list(outputs) if isinstance(outputs, (list, tuple)) else [outputs])
        return [x.grad for x in chosen], outputs
    return wrapped


def grad(func, argnum=None):
    """A function returning the gradients of func's output w.r.t. the chosen arguments."""
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(with_loss)
    def wrapped(*args):
        return with_loss(*args)[0]
    return wrapped
