"""The storage type of a bound symbol's outputs, as MXNet's storage-type inference gives it.

kiln's executor computes on dense arrays; MXNet's keeps some outputs sparse: an op whose
sparse kernel maps zeros to zeros (relu, abs, square, ...) keeps its input's storage and
stored positions, the scatter ops keep their left operand's, `_square_sum` of a row_sparse
array along axis 1 (keepdims) is row_sparse over the same rows and `_sparse_retain` keeps
the rows asked for. `output_storage` follows an output back through such ops to a sparse
argument; `present` then stores the dense result at that argument's positions."""
import numpy as _np

# ops whose sparse kernels keep the input's storage and stored positions (MXNet's unary
# FInferStorageType with a zero-preserving kernel)
SAME_STORAGE = frozenset("""
    relu abs sign round rint ceil floor trunc fix square sqrt negative _copy identity
    BlockGrad stop_gradient make_loss arcsin arctan arcsinh arctanh sinh tanh sin tan
    radians degrees expm1 log1p _mul_scalar _div_scalar _scatter_elemwise_div
    _scatter_plus_scalar _scatter_minus_scalar
    """.split())


def output_storage(node, index, arg_sparse):
    """(stype, the sparse argument whose positions it keeps, how) of output `index` of
    `node`, or None for dense. `arg_sparse` maps argument names to their sparse arrays."""
    while True:
        if node.is_var:
            array = arg_sparse.get(node.name)
            return None if array is None else (array.stype, array, "same")
        if node.op in SAME_STORAGE:
            node, index = node.inputs[0]
            continue
        if node.op == "_square_sum" and _axis_one_keepdims(node.attrs):
            found = output_storage(*node.inputs[0], arg_sparse)
            if found and found[0] == "row_sparse":
                return ("row_sparse", found[1], "row_sums")
            return None
        if node.op in ("_sparse_retain", "sparse_retain", "retain"):
            return ("row_sparse", None, "retain")
        return None


def _axis_one_keepdims(attrs):
    axis = attrs.get("axis")
    axis = axis[0] if isinstance(axis, (tuple, list)) and len(axis) == 1 else axis
    return axis in (1, -1) and bool(attrs.get("keepdims", False))


def present_outputs(heads, outputs, arg_sparse):
    """The executor's dense outputs, each in the storage MXNet gives it."""
    from ..nd.sparse import creation
    shown = []
    for (node, index), out in zip(heads, outputs):
        storage = output_storage(node, index, arg_sparse)
        shown.append(out if storage is None else
                     _present(out.asnumpy(), storage, creation.PARTS))
    return shown


def _present(dense, storage, make):
    """The dense output `dense` (NumPy) in the storage `output_storage` found; `make` is
    kiln/mx/nd/sparse's constructors (csr_parts, row_sparse_parts, dense_to_sparse)."""
    stype, source, how = storage
    if how == "retain" or source is None:
        return make["dense_to_sparse"](dense, stype)
    if stype == "row_sparse":
        rows = source._idx
        values = dense[rows] if how == "same" else dense[rows][:, :1]
        return make["row_sparse_parts"](values, rows, dense.shape)
    m = source._csr
    rows = _np.repeat(_np.arange(m.shape[0]), _np.diff(m.indptr))
    return make["csr_parts"](dense[rows, m.indices], m.indices, m.indptr, dense.shape)


def gradient_storage(symbol):
    """name -> storage type of the gradient arrays MXNet's simple_bind makes sparse: the
    weight of an Embedding with sparse_grad=True is row_sparse."""
    from ..ops import lookup
    found = {}
    for node in symbol._nodes():
        if node.is_var or node.op != "Embedding" or \
                str(node.attrs.get("sparse_grad", False)).lower() not in ("true", "1"):
            continue
        names = lookup(node.op).input_names(node.attrs)
        for (src, _), in_name in zip(node.inputs, names):
            if in_name == "weight" and src.is_var:
                found[src.name] = "row_sparse"
    return found
