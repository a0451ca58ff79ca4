"""Tape-based reverse-mode autodiff with MXNet's API.

Every op applied while recording, to an input that needs a gradient, leaves a TapeNode.
backward() walks the nodes in reverse topological order and calls each node's gradient
function, which is written with kiln ops: so a backward pass can itself be recorded
(create_graph=True) or traced into a graph by hybridize.

Threads. As in MXNet and PyTorch, the autograd state is per thread: whether ops are
recorded, training or predict mode, and the scopes entered (record(), pause(), ...). A
thread's ops go on its own tape, so several threads may each train their own model at
once, eagerly or hybridized, with the same results as one after the other.

What threads may share:
  - arrays and models used for inference only (no record()), including hybridized blocks:
    calls run concurrently, and the first calls of one signature wait for one trace;
  - a Parameter that only one thread computes gradients for at a time. Two threads'
    backward() writing the same parameter's gradient at once, or a Trainer.step reading or
    updating the parameters while another thread's backward() writes their gradients or
    another step runs on them, is a race: kiln raises a KilnError for it rather than
    train on a mix of two threads' gradients. A model shared by training threads needs
    each thread's whole step (forward under record(), backward, Trainer.step) under one
    lock (MXNet's answer too); better, give each thread its own model and Trainer.
  - random draws (initializers, dropout) come from one process-wide generator: threads
    that draw at once get a different split of its numbers on every run.
"""
import contextlib
import threading
import weakref

from .base import KilnError, where_in_user_code, postorder
from .gradient_claims import GradientClaim
from .primitive import REGISTRY


class _State(threading.local):
    """This thread's autograd state (a new thread starts neither recording nor training).
    The eager dispatch reads `recording` on every op: a thread-local attribute costs about
    20 ns more to read than a plain one."""

    def __init__(self):
        self.recording = False
        self.training = False
        self.wanted = []      # per running gradient rule: which of its inputs' gradients are used
        self.retaining = []   # per running backward pass: is its tape kept (retain_graph)?


_state = _State()


def is_recording():
    """Whether operations are being recorded for differentiation (inside `autograd.record()`), in
    this thread."""
    return _state.recording


def is_training():
    """Whether layers run in training mode (dropout active, batch norm updating its statistics), in
    this thread."""
    return _state.training


def set_recording(flag):
    """Turn recording on or off for this thread; returns the previous state."""
    prev, _state.recording = _state.recording, bool(flag)
    return prev


def set_training(flag):
    """Turn training mode on or off for this thread; returns the previous state."""
    prev, _state.training = _state.training, bool(flag)
    return prev


class _scope(contextlib.ContextDecorator):
    """Set recording/training (None: leave as is) inside a `with` block, or a function it
    decorates. A class, not a generator: entered on every recorded step, it costs a third.
    The flags it sets are the entering thread's. As a decorator, each call enters a copy of
    it, so a decorated function may run in several threads at once."""
    __slots__ = ("recording", "training", "saved")

    def __init__(self, recording, training):
        self.recording, self.training = recording, training
        self.saved = []      # a stack: one object may be entered again inside itself

    def _recreate_cm(self):
        return _scope(self.recording, self.training)

    # the thread's dict of _state, looked up once: each thread-local attribute access
    # looks the thread up again (a scope cost 0.8 us that way, 0.6 us like this)
    def __enter__(self):
        state = _state.__dict__
        self.saved.append((state["recording"], state["training"]))
        if self.recording is not None:
            state["recording"] = self.recording
        if self.training is not None:
            state["training"] = self.training
        return None

    def __exit__(self, *exc):
        state = _state.__dict__
        state["recording"], state["training"] = self.saved.pop()
        return False


def record(train_mode=True):
    """Record ops for differentiation; `train_mode` also switches layers to training."""
    return _scope(True, train_mode)


def pause(train_mode=False):
    """A scope (or decorator) in which nothing is recorded, in predict mode unless
    `train_mode=True`."""
    return _scope(False, train_mode)


def train_mode():
    """A scope (or decorator) in which layers run in training mode; recording is left as it is."""
    return _scope(None, True)


def predict_mode():
    """A scope (or decorator) in which layers run in predict mode; recording is left as it is."""
    return _scope(None, False)


class Leaf:
    """The tape entry of an array that had attach_grad() called: gradients stop here.

    The array holds its leaf (`_tape`) and the leaf only a weak reference back: a strong
    one made every graded array a reference cycle, so a dropped input and its gradient
    (512 MB each in MXNet's test_slice_* tests) stayed alive until a full garbage
    collection. A gradient that reaches the leaf of an array gone meanwhile has nowhere
    to go and is dropped."""
    __slots__ = ("_array", "out_avals")
    in_refs = ()

    def __init__(self, array):
        self._array = weakref.ref(array)
        # a leaf is its own single output (x.backward() on a leaf works)
        self.out_avals = ((array.shape, array.dtype),)

    @property
    def array(self):
        """The graded array, or None once it has been dropped."""
        return self._array()


class TapeNode:
    """One recorded op: how to turn output gradients into input gradients."""
    __slots__ = ("name", "backward", "in_refs", "out_avals", "sparse", "attrs", "saved_in")

    def __init__(self, name, backward, in_refs, out_avals, sparse=False, attrs=None,
                 saved_in=None):
        self.sparse = sparse        # backward() takes None for an output no head reached
        self.name = name
        self.backward = backward
        self.in_refs = in_refs      # per input: (tape entry, output index) or None
        self.out_avals = out_avals  # per output: (shape, dtype)
        # a primitive's attributes and the inputs its rule keeps (None where it keeps none),
        # until backward() frees the rule: what get_symbol() shows of the recorded op
        self.attrs = attrs
        self.saved_in = saved_in


def input_needed(k):
    """Inside a gradient rule: is the gradient of input k used? A rule may return None for
    an unused one instead of computing it (a convolution's gradient in its input image)."""
    wanted = _state.wanted
    return not wanted or wanted[-1][k]


# What the tape keeps alive for a gradient rule that does not read it, so an activation
# dies when no rule needs it (eager CNNs: batch norm's output feeds a ReLU, whose rule
# reads only its own output; a residual sum feeds one too):
#   rules that read only the output (relu: g where out > 0) keep no inputs,
#   rules that never read the output keep no output.
GRAD_FROM_OUTPUT = frozenset({"relu", "exp", "sigmoid", "tanh", "sqrt"})
GRAD_WITHOUT_OUTPUT = frozenset({"add", "subtract", "multiply", "matmul", "conv", "pool",
                                 "batch_norm_train", "concatenate"})


def record_primitive(prim, inputs, attrs, out):
    """Put one primitive application on the tape (the caller checked that it is needed)."""
    in_refs = tuple([(a._tape, a._tidx) if a._tape is not None else None for a in inputs])
    saved_in = ((None,) * len(inputs) if prim.name in GRAD_FROM_OUTPUT
                else tuple([a._alias() for a in inputs]))
    wanted = tuple([r is not None for r in in_refs])
    grad = prim.grad

    def backward(out_grads):
        # the saved output is on the tape too (exp's rule is g * out), so create_graph
        # differentiates through it
        running = _state.wanted
        running.append(wanted)
        try:
            grads = grad(out_grads[0], saved_out, *saved_in, **attrs)
        finally:
            running.pop()
        if len(grads) != len(saved_in):
            raise KilnError(f"{prim.name}: gradient rule returned {len(grads)} gradients "
                            f"for {len(saved_in)} inputs")
        return grads

    node = TapeNode(prim.name, backward, in_refs, ((out.shape, out.dtype),), False, attrs,
                    saved_in)
    out._tape, out._tidx = node, 0
    saved_out = None if prim.name in GRAD_WITHOUT_OUTPUT else out._alias()


def record_custom(name, inputs, outputs, backward, sparse=False):
    """Put a multi-output function (a compiled graph, a custom Function) on the tape."""
    in_refs = tuple((a._tape, a._tidx) if a._tape is not None else None for a in inputs)
    node = TapeNode(name, backward, in_refs, tuple((o.shape, o.dtype) for o in outputs),
                    sparse)
    for i, o in enumerate(outputs):
        o._tape, o._tidx = node, i
    return node


def _topological(heads):
    return postorder(list(heads), lambda n: [r[0] for r in n.in_refs if r is not None])


def retaining():
    """Inside a gradient rule: may the tape be walked again after this pass? (A compiled
    backward then keeps the activations it was given intact.) True outside a pass."""
    passes = _state.retaining
    return passes[-1] if passes else True


def _run_backward(heads, head_grads, retain_graph, create_graph, claim=None):
    """Propagate gradients; returns {id(leaf): gradient} for every reached leaf. With
    `claim` (a GradientClaim), the reached leaves' gradients are claimed before the walk."""
    passes = _state.retaining
    passes.append(bool(retain_graph))
    try:
        return _propagate(heads, head_grads, retain_graph, create_graph, claim)
    finally:
        passes.pop()


def _propagate(heads, head_grads, retain_graph, create_graph, claim):
    from .ndarray import ndarray, full_like, as_array
    roots = []
    grads = {}
    for h, hg in zip(heads, head_grads):
        if h._tape is None:
            raise KilnError("cannot differentiate: the array was not computed from arrays "
                            "with attach_grad() inside autograd.record()" + where_in_user_code())
        if hg is None:
            hg = full_like(h, 1)
        elif not isinstance(hg, ndarray):
            hg = as_array(hg, dtype=h.dtype)
        slot = grads.setdefault(id(h._tape), [None] * len(h._tape.out_avals))
        slot[h._tidx] = hg if slot[h._tidx] is None else slot[h._tidx] + hg
        roots.append(h._tape)
    leaf_grads = {}
    order = _topological(roots)
    if claim is not None:
        claim.take([n.array for n in order if n.__class__ is Leaf and n.array is not None])
    with _scope(create_graph, None):
        for node in reversed(order):
            out_grads = grads.pop(id(node), None)
            if out_grads is None:
                continue
            if isinstance(node, Leaf):
                leaf_grads[id(node)] = (node, out_grads[0])
                continue
            if node.backward is None:
                if any(node is r for r in roots):
                    raise KilnError("backward through the same graph a second time; pass "
                                    "retain_graph=True to the first backward()"
                                    + where_in_user_code())
                # an array computed in a graph an earlier backward() freed, used again by
                # new ops: its history is gone and it is a constant to them (MXNet clears
                # it so): no gradient flows past it
                continue
            if not node.sparse:
                zeros = REGISTRY["full"]
                out_grads = [g if g is not None else zeros(shape=tuple(shape), value=0, dtype=dt)
                             for g, (shape, dt) in zip(out_grads, node.out_avals)]
            in_grads = node.backward(out_grads)
            if not retain_graph:
                node.backward = node.saved_in = None
            for ref, g in zip(node.in_refs, in_grads):
                if ref is None or g is None:
                    continue
                slot = grads.setdefault(id(ref[0]), [None] * len(ref[0].out_avals)
                                        if not isinstance(ref[0], Leaf) else [None])
                slot[ref[1]] = g if slot[ref[1]] is None else slot[ref[1]] + g
    return leaf_grads


# MXNet's NDArray._fresh_grad: has a backward() written this array's .grad since the flag
# was last cleared? id(array) -> [weakref to the array, the grad array written]; a new
# .grad (attach_grad, mark_variables) is not the one written, so it is not fresh
_fresh = {}


def _note_fresh(array):
    entry = _fresh.get(id(array))
    if entry is None or entry[0]() is not array:
        key = id(array)

        def forget(ref):
            if _fresh.get(key, (None,))[0] is ref:
                del _fresh[key]
        entry = _fresh[key] = [weakref.ref(array, forget), None]
    entry[1] = array._grad


def grad_is_fresh(array):
    """MXNet's `_fresh_grad` of `array`."""
    entry = _fresh.get(id(array))
    return (entry is not None and entry[0]() is array and array._grad is not None
            and entry[1] is array._grad)


def set_grad_fresh(array, flag):
    """Set MXNet's `_fresh_grad` of `array` (Trainer-style code clears it after an update)."""
    if flag:
        _note_fresh(array)
    elif id(array) in _fresh:
        _fresh[id(array)][1] = None


def backward(heads, head_grads=None, retain_graph=False, train_mode=True, create_graph=False):
    """Compute the gradients of `heads` and store them in the .grad of each leaf."""
    heads, head_grads = _as_lists(heads, head_grads)
    claim = GradientClaim("backward()")
    try:
        with _scope(None, train_mode):
            found = _run_backward(heads, head_grads, retain_graph, create_graph, claim)
        for leaf, g in found.values():
            array = leaf.array
            if array is not None and array._grad_req not in (None, "null"):
                array._store_grad(g, create_graph)
                _note_fresh(array)
    finally:
        claim.release()


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Return the gradients of `heads` with respect to `variables` (without touching .grad)."""
    heads, head_grads = _as_lists(heads, head_grads)
    single = not isinstance(variables, (list, tuple))
    variables = [variables] if single else list(variables)
    for v in variables:
        if not isinstance(v._tape, Leaf):
            raise KilnError("autograd.grad: every variable needs attach_grad() before "
                            "recording" + where_in_user_code())
    if retain_graph is None:
        retain_graph = create_graph
    with _scope(None, train_mode):
        found = _run_backward(heads, head_grads, retain_graph, create_graph)
    from .ndarray import full_like
    out = []
    for v in variables:
        hit = found.get(id(v._tape))
        out.append(hit[1] if hit is not None else full_like(v, 0))
    return out[0] if single else out


# MXNet 1.x's get_symbol builds a Symbol, which lives on the mx floor: it registers the
# builder here (kiln/mx/sym/recorded.py), a function(array) -> Symbol
SYMBOL_OF_TAPE = [None]


def get_symbol(x):
    """The computation recorded for `x` (inside autograd.record()) as an MXNet 1.x Symbol."""
    if SYMBOL_OF_TAPE[0] is None:
        raise KilnError("autograd.get_symbol: needs kiln.mx (MXNet 1.x symbols); import it"
                        + where_in_user_code())
    if x._tape is None:
        raise KilnError("autograd.get_symbol: the array was not computed from arrays with "
                        "attach_grad() inside autograd.record()" + where_in_user_code())
    return SYMBOL_OF_TAPE[0](x)


def _as_lists(heads, head_grads):
    if not isinstance(heads, (list, tuple)):
        heads = [heads]
        head_grads = [head_grads]
    elif head_grads is None:
        head_grads = [None] * len(heads)
    return list(heads), list(head_grads)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Attach gradient buffers to arrays: each of `variables` gets the matching array of
    `gradients` as its `.grad`, with `grad_reqs` ('write', 'add' or 'null')."""
    if not isinstance(variables, (list, tuple)):
        variables, gradients = [variables], [gradients]
    reqs = grad_reqs if isinstance(grad_reqs, (list, tuple)) else [grad_reqs] * len(variables)
    for v, g, r in zip(variables, gradients, reqs):
        v.attach_grad(r)
        v._grad = g


class Function:
    """A user-defined differentiable function (MXNet's autograd.Function).

    Subclasses implement forward(*inputs) and backward(*output_grads) on kiln arrays.
    """

    def __init__(self):
        self._saved = ()

    def save_for_backward(self, *arrays):
        self._saved = arrays

    @property
    def saved_tensors(self):
        return self._saved

    def __call__(self, *inputs):
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        single = not isinstance(outputs, (list, tuple))
        outs = [outputs] if single else list(outputs)
        if is_recording() and any(a._tape is not None for a in inputs):
            outs = [o._alias() for o in outs]

            def backward_fn(out_grads):
                with pause():
                    gs = self.backward(*out_grads)
                return list(gs) if isinstance(gs, (list, tuple)) else [gs]

            record_custom(type(self).__name__, inputs, outs, backward_fn)
        return outs[0] if single else tuple(outs)
