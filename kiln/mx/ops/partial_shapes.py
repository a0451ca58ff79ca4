"""MXNet's shape rules for partly known shapes (its FInferShape functions), per op.

A shape here is a tuple with -1 for a size not known yet, or None for a rank not known
(MXNet's own encoding; legacy mode's 0 is converted at the API, kiln/mx/sym/partial_shapes).
A rule takes (attrs, input shapes, output shapes) and returns both lists with what it
could fill in; kiln/mx/sym/partial_shapes.py sweeps the graph forward and backward with
them until nothing changes, and computes a node exactly (kiln's own shape rules) once its
inputs are all known. Ops without a rule here are computed only exactly, except the
elementwise ones (MXOp.same_shape), which unify every input and output.
"""
from .table import OPS
from .tensor import mx_legacy_target, mx_reshape_target


class ShapeConflict(Exception):
    """Two facts about one shape disagree (MXNet's 'Shape inconsistent')."""


def known(shape):
    return shape is not None and all(int(d) >= 0 for d in shape)


def merge(a, b):
    """What two partial shapes of one value say together."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ShapeConflict(f"{tuple(a)} vs {tuple(b)}")
    out = []
    for x, y in zip(a, b):
        if x != y and x >= 0 and y >= 0:
            raise ShapeConflict(f"{tuple(a)} vs {tuple(b)}")
        out.append(x if x >= 0 else y)
    return tuple(out)


def elementwise(attrs, ins, outs):
    """MXNet's ElemwiseShape: every input and output has one shape."""
    shape = None
    for s in list(ins) + list(outs):
        shape = merge(shape, s)
    return [shape] * len(ins), [shape] * len(outs)


def _rule(names):
    def register(fn):
        for name in names.split():
            OPS[name].partial_shape = fn
        return fn
    return register


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


@_rule("_zeros _ones _full")
def creation(attrs, ins, outs):
    """A creation op's shape attribute, its unknown sizes learned from its readers."""
    return ins, [merge(outs[0], unknown_as_minus_one(attrs.get("shape", ())))]


def unknown_as_minus_one(shape):
    """A user's shape with MXNet's unknowns as -1: -1 always, 0 in legacy shape mode, and
    () (an unknown rank) in legacy mode."""
    from ..util import is_np_shape
    shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    if is_np_shape():
        return shape
    if not shape:
        return None
    return tuple(-1 if d == 0 else d for d in shape)


def _reverse_reshape(data, out):
    """MXNet's ReverseReshapeInferShape: one unknown input size from a known output."""
    if not known(out) or data is None or known(data):
        return data
    unknown = [k for k, d in enumerate(data) if d < 0]
    if len(unknown) != 1:
        return data
    rest = _size(d for d in data if d >= 0)
    if rest == 0:
        return data
    data = list(data)
    data[unknown[0]] = _size(out) // rest
    return tuple(data)


def _infer_reshape(spec, data, reverse):
    """MXNet's InferReshapeShape on a partly known input: the target with unknown sizes
    staying -1, and the inferred size filled in once the input is known."""
    out = list(mx_reshape_target(data, spec, reverse))
    if known(data) and out.count(-1) == 1:
        rest = _size([d for d in out if d != -1])
        out[out.index(-1)] = _size(data) // max(rest, 1)
    return tuple(out)


def _reshape_target(attrs, data):
    shape = attrs.get("shape") or attrs.get("newshape")
    if shape:
        return _infer_reshape(shape, data, bool(attrs.get("reverse", False)))
    target = attrs.get("target_shape")
    if not target:
        return None
    if known(data):
        return mx_legacy_target(data, target, bool(attrs.get("keep_highest", False)))
    return tuple(-1 if int(d) == 0 else int(d) for d in target)


@_rule("Reshape reshape _npx_reshape _np_reshape")
def reshape(attrs, ins, outs):
    data, out = ins[0], outs[0]
    if data is None:
        return [_reverse_reshape(data, out)], outs
    target = _reshape_target(attrs, data) if not known(data) or not known(out) else None
    if target is not None:
        out = merge(out, target)
    return [_reverse_reshape(data, out)], [out]


@_rule("transpose _np_transpose")
def transpose(attrs, ins, outs):
    data, out = ins[0], outs[0]
    if data is None and out is None:
        return ins, outs
    ndim = len(data if data is not None else out)
    axes = tuple(int(a) % ndim for a in (attrs.get("axes") or ())) or \
        tuple(range(ndim))[::-1]
    forward = tuple(data[a] for a in axes) if data is not None else None
    backward = None
    if out is not None:
        back = [-1] * ndim
        for k, a in enumerate(axes):
            back[a] = out[k]
        backward = tuple(back)
    return [merge(data, backward)], [merge(out, forward)]


def _slice_dim(length, b, e, s):
    """MXNet's GetIndexRange + SetSliceOpOutputDimSize for one known axis."""
    s = 1 if s is None else int(s)
    if length == 0:
        return 0
    b = (length - 1 if s < 0 else 0) if b is None else int(b)
    e = (-1 if s < 0 else length) if e is None else int(e) + (length if int(e) < 0 else 0)
    b += length if b < 0 else 0
    b = 0 if b < 0 and s > 0 else b
    b = length - 1 if b > length - 1 and s < 0 else b
    b = -1 if b < 0 or b > length - 1 else b
    e = min(max(e, -1), length)
    if e == b or b < 0:
        return 0
    if s > 0:
        return (e - b - 1) // s + 1 if e > b else 0
    return (b - e - 1) // (-s) + 1 if e < b else 0


def _as_tuple(v):
    return (v,) if v is None or isinstance(v, int) else tuple(v)


@_rule("slice crop")
def slice_(attrs, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    begin, end = _as_tuple(attrs.get("begin", ())), _as_tuple(attrs.get("end", ()))
    step = _as_tuple(attrs.get("step", ()) or ())
    shape = list(data)
    for k in range(min(len(begin), len(shape))):
        if shape[k] >= 0:
            shape[k] = _slice_dim(shape[k], begin[k], end[k],
                                  step[k] if k < len(step) else None)
    return ins, [merge(outs[0], tuple(shape))]


@_rule("slice_axis")
def slice_axis(attrs, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    axis = int(attrs.get("axis", 0)) % len(data)
    shape = list(data)
    if shape[axis] >= 0:
        end = attrs.get("end")
        shape[axis] = _slice_dim(shape[axis], attrs.get("begin", 0), end, None)
    return ins, [merge(outs[0], tuple(shape))]


@_rule("FullyConnected")
def fully_connected(attrs, ins, outs):
    """The output's batch size from the data and back (MXNet's FullyConnectedShape)."""
    data, out = ins[0], outs[0]
    if data is None:
        return ins, outs
    n = int(attrs["num_hidden"])
    if attrs.get("flatten", True):
        out = merge(out, (data[0], n))
        data = merge(data, (out[0],) + tuple(data[1:]))
    else:
        out = merge(out, tuple(data[:-1]) + (n,))
        data = merge(data, tuple(out[:-1]) + (data[-1],))
    return [data] + list(ins[1:]), [out]
