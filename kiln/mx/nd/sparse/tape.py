"""Sparse arrays inside `autograd.record()`, as in MXNet: an operation with a sparse operand
is recorded and differentiated like its dense form.

A sparse array reads as its dense value in any dense operation (storage.py's `_data`), so a
dense fallback is recorded by the dispatcher as usual. What computes on SciPy's parts
(ops.py: elementwise arithmetic, dot, comparisons) puts its sparse result on the tape with
the gradient of the same operation on the dense values (`link_replica`); a change of
storage is the identity (`link_storage`). Gradients reach a sparse leaf dense or sparse and
are stored in the storage of its `.grad` (kiln/_core/ndarray.py `_store_grad`)."""
from ...._core import autograd
from ...._core.ndarray import ndarray


def _recorded_from(inputs):
    return autograd.is_recording() and any(
        isinstance(a, ndarray) and a._tape is not None for a in inputs)


def _identity(out_grads):
    return [out_grads[0]]


def link_storage(source, result):
    """`result`, `source` in another storage: inside record(), on the tape as the identity."""
    if result is not source and _recorded_from((source,)):
        autograd.record_custom("cast_storage", [source], [result], _identity)
    return result


def link_replica(result, inputs, dense_fn):
    """`result`, computed from `inputs` on sparse parts: inside record(), on the tape with the
    gradient of `dense_fn()`, the same operation on the operands read densely."""
    if result is not None and _recorded_from(inputs):
        replica = dense_fn()
        result._tape, result._tidx = replica._tape, replica._tidx
    return result
