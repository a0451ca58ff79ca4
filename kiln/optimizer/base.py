"""The Optimizer base class and the registry that `Trainer(params, 'adam')` looks names up in.

An optimizer only ever sees NumPy arrays: `weight` and `grad` are the `_data` buffers of a
parameter and its gradient, and every state array is a NumPy array it created itself.  Each
family keeps its arithmetic in one pure function (`sgd_update`, `adam_update`, ...) that
updates `weight` and the state in place, so a later compiler can trace exactly that function.

Conventions follow MXNet: `rescale_grad` multiplies the raw gradient first, then
`clip_gradient` clips it, then weight decay is applied.  The learning rate of a parameter is
`lr * lr_mult` and its weight decay `wd * wd_mult`, with the multipliers read from the
Parameter (Gluon) or set by `set_lr_mult` / `set_wd_mult`.
"""
import numpy as _np

from .._core.base import KilnError
from .._core.writes import arrays_written

_REGISTRY = {}

# array types of higher floors that an update takes through a function of theirs:
# type -> function(optimizer, index, weight, grad, state). kiln/mx/nd/sparse registers
# MXNet 1.x's sparse arrays (lazy row updates, dense fallbacks).
ARRAY_UPDATES = {}


def register(klass):
    """Class decorator: make an optimizer creatable by its lower-cased class name."""
    name = klass.__name__.lower()
    if name in _REGISTRY and _REGISTRY[name] is not klass:
        raise KilnError(f"optimizer {name!r} is already registered by "
                        f"{_REGISTRY[name].__module__}.{_REGISTRY[name].__name__}")
    _REGISTRY[name] = klass
    return klass


def create(name, **kwargs):
    """An optimizer by name ('sgd', 'nag', 'adam', 'adamw'), or pass an instance through."""
    if isinstance(name, Optimizer):
        if kwargs:
            raise KilnError("optimizer_params must be None when an Optimizer instance is "
                            "given; set them on the instance instead")
        return name
    if not isinstance(name, str):
        raise KilnError(f"optimizer must be a name or an Optimizer, got {type(name).__name__}")
    klass = _REGISTRY.get(name.lower())
    if klass is None:
        raise KilnError(f"unknown optimizer {name!r}; expected one of {sorted(_REGISTRY)}")
    return klass(**kwargs)


def registered():
    """The names of the registered optimizers (what `optimizer.create` and `gluon.Trainer` accept),
    sorted."""
    return sorted(_REGISTRY)


def preprocess_grad(grad, rescale_grad, clip_gradient):
    """rescale, then clip: MXNet's order.  Returns a new array; `grad` is left untouched.

    Operators and .clip only, so it works on NumPy buffers and on kiln symbols alike."""
    g = grad * rescale_grad
    if clip_gradient is not None and clip_gradient >= 0:
        g = g.clip(-clip_gradient, clip_gradient)
    return g


class SchedulerOwnsLearningRate(KilnError, UserWarning):
    """set_learning_rate on an optimizer whose lr_scheduler owns the rate (MXNet raises a
    UserWarning for it, which MXNet code catches)."""


class Optimizer:
    """Base class: learning rate and its schedule, weight decay and per-parameter multipliers.

    Subclasses implement `create_state(index, weight)` (NumPy arrays, or None) and
    `step_one(weight, grad, state, lr, wd, t)` which calls the family's pure update function.
    """

    def __init__(self, learning_rate=None, wd=0.0, rescale_grad=1.0, clip_gradient=None,
                 lr_scheduler=None, begin_num_update=0, param_dict=None, multi_precision=False,
                 param_idx2name=None, **kwargs):
        if kwargs.get("sym") is not None:
            raise KilnError("the symbolic `sym` argument of MXNet 1.x optimizers is not "
                            "supported")
        if learning_rate is None:   # MXNet: the scheduler's base_lr, else 0.01
            learning_rate = lr_scheduler.base_lr if lr_scheduler is not None else 0.01
        self.lr = float(learning_rate)
        self.wd = float(wd)
        self.rescale_grad = float(rescale_grad)
        self.clip_gradient = None if clip_gradient is None else float(clip_gradient)
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is not None:
            lr_scheduler.base_lr = self.lr
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._index_update_count = {}
        self.param_dict = dict(param_dict) if param_dict else {}
        self.idx2name = dict(param_idx2name) if param_idx2name else {}
        self.lr_mult = {}
        self.wd_mult = {}
        self.multi_precision = multi_precision  # float16 weights get float32 master copies

    # ---- learning rate -----------------------------------------------------------------------
    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        if self.lr_scheduler is not None:
            raise SchedulerOwnsLearningRate(
                "set_learning_rate: this optimizer has an lr_scheduler, which owns the "
                "learning rate; change the scheduler instead")
        self.lr = float(lr)

    def set_lr_mult(self, args_lr_mult):
        self.lr_mult = dict(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        self.wd_mult = dict(args_wd_mult)

    def _mult(self, index, table, attr):
        param = self.param_dict.get(index)
        if param is not None:
            return float(getattr(param, attr, 1.0))
        if index in table:
            return table[index]
        return table.get(self.idx2name.get(index), 1.0)

    def _get_lr(self, index):
        return self.learning_rate * self._mult(index, self.lr_mult, "lr_mult")

    def _get_wd(self, index):
        return self.wd * self._mult(index, self.wd_mult, "wd_mult")

    def _update_count(self, index):
        """Count one more update of `index`; returns that parameter's step number t >= 1."""
        t = self._index_update_count.get(index, self.begin_num_update) + 1
        self._index_update_count[index] = t
        self.num_update = max(t, self.num_update)
        return t

    # ---- the update --------------------------------------------------------------------------
    def create_state(self, index, weight):
        return None

    # where the float32 master copy sits in a multi-precision state (MXNet 1.x's order:
    # (master, state) in general, (state, master) for the SGD family)
    master_copy_first = True

    def _uses_master_copy(self, weight):
        return bool(self.multi_precision) and _np.dtype(weight.dtype) == _np.float16

    def create_state_multi_precision(self, index, weight):
        """create_state; with multi_precision and a float16 weight, also a float32 master
        copy of the weight, which the update works on (MXNet 1.x's mixed precision)."""
        if not self._uses_master_copy(weight):
            return self.create_state(index, weight)
        master = weight.astype(_np.float32)     # the weight's own kind of array
        state = self.create_state(index, master)
        return (master, state) if self.master_copy_first else (state, master)

    def update(self, index, weight, grad, state):
        """Update one parameter (or lists of them) in place; NumPy arrays throughout."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update(i, w, g, s)
            return
        foreign = ARRAY_UPDATES.get(type(weight)) or ARRAY_UPDATES.get(type(grad))
        if foreign is not None:
            return foreign(self, index, weight, grad, state)
        weight, grad = _as_numpy(weight), _as_numpy(grad)
        t = self._update_count(index)
        try:
            self._update_one(index, weight, grad, state, t)
        finally:
            arrays_written()    # the weight changed in place (see kiln/_core/writes.py)

    def update_multi_precision(self, index, weight, grad, state):
        """`update`, on the float32 master copy when create_state_multi_precision made one
        (then the float16 weight gets its rounded value). A subclass's own `update` is the
        one called, as in MXNet."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, s)
            return
        if not self._uses_master_copy(weight):
            return self.update(index, weight, grad, state)
        master, inner = state if self.master_copy_first else state[::-1]
        self.update(index, master, grad.astype(_np.float32), inner)
        weight[...] = master
        arrays_written()

    step = update

    def _update_one(self, index, weight, grad, state, t):
        """One parameter's update from its raw gradient (t: its update count)."""
        g = preprocess_grad(grad, self.rescale_grad, self.clip_gradient)
        self.step_one(weight, g, state, self._get_lr(index), self._get_wd(index), t)

    def step_one(self, weight, grad, state, lr, wd, t):
        self.apply(weight, grad, state, self.scalars(lr, wd, t))

    def scalars(self, lr, wd, t):
        """The per-step scalars of the update, as Python floats (dict: name -> value)."""
        raise NotImplementedError

    def apply(self, weight, grad, state, s):
        """The array arithmetic of one update, in place; operators only (see sgd.py)."""
        raise NotImplementedError

    # ---- states as flat arrays (for Trainer.save_states) -------------------------------------
    @staticmethod
    def state_arrays(state):
        """A state as a list of NumPy arrays (None -> [])."""
        if state is None:
            return []
        if isinstance(state, (list, tuple)):
            return [s for s in state]
        return [state]

    def __repr__(self):
        return (f"{type(self).__name__}(learning_rate={self.learning_rate}, wd={self.wd}, "
                f"rescale_grad={self.rescale_grad}, clip_gradient={self.clip_gradient})")


def _as_numpy(x):
    """Accept a kiln ndarray (use its buffer, so the write lands in place) or a NumPy array."""
    if isinstance(x, _np.ndarray):
        return x
    data = getattr(x, "_data", None)
    if isinstance(data, _np.ndarray):
        return data
    raise KilnError(f"optimizer update: expected a NumPy or eager kiln array, got "
                    f"{type(x).__name__}")
