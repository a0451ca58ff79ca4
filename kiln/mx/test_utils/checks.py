"""mx.test_utils' checks of symbols and blocks: forward, backward and numeric gradients of a
bound symbol, one symbol across dtypes (check_consistency), and Gluon's eager == hybridized."""
import numpy as _np

from .comparison import _host, assert_almost_equal, default_context, default_numeric_eps


def _parse_location(sym, location, dtype):
    """MXNet's _parse_location: the arguments' values by name, as arrays of `dtype` (or of
    their own dtype when dtype is "asnumpy"), sorted by name."""
    from ..nd import array
    names = sym.list_arguments()
    if isinstance(location, dict):
        if set(location) != set(names):
            raise ValueError("Symbol arguments and keys of the given location do not match."
                             f"symbol args:{set(names)}, location.keys():{set(location)}")
    else:
        location = dict(zip(names, location))
    return {k: _as_nd(v, dtype, array) for k, v in sorted(location.items())}


def _as_nd(value, dtype, array):
    if isinstance(value, _np.ndarray):
        return array(value, dtype=value.dtype if dtype == "asnumpy" else dtype)
    if not hasattr(value, "asnumpy"):
        value = _np.asarray(value)
        return array(value, dtype=value.dtype if dtype == "asnumpy" else dtype)
    return value


def _parse_aux_states(sym, aux_states, dtype):
    from ..nd import array
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError("Symbol aux_states names and given aux_states do not match."
                             f"symbol aux_names:{set(names)}, aux_states.keys:"
                             f"{set(aux_states)}")
    else:
        aux_states = dict(zip(names, aux_states))
    return {k: array(_host(v), dtype=_np.asarray(_host(v)).dtype if dtype == "asnumpy"
                     else dtype) for k, v in aux_states.items()}


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=_np.float32):
    """Bind `sym` to the arrays of `location`, run it forward in predict mode and assert that its
    outputs are close to `expected` (a list, or a dict by output name)."""
    from ..nd import zeros
    location = _parse_location(sym, location, dtype)
    aux_states = _parse_aux_states(sym, aux_states, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    grads = {k: zeros(v.shape, dtype=v.dtype if dtype == "asnumpy" else dtype)
             for k, v in location.items()}
    exe = sym.bind(ctx or default_context(), args=location, args_grad=grads,
                   aux_states=aux_states)
    exe.forward(is_train=False)
    for name, exp, out in zip(sym.list_outputs(), expected, exe.outputs):
        assert_almost_equal(exp, out, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return exe.outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=_np.float32):
    """Bind `sym` to the arrays of `location`, run it forward and backward with `out_grads`, and
    assert that the arguments' gradients are close to `expected`; as in MXNet, the gradient
    arrays start random, so 'add' checks the sum and 'null' checks they were left alone."""
    from ..nd import array
    location = _parse_location(sym, location, dtype)
    aux_states = _parse_aux_states(sym, aux_states, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    start = {k: _np.random.normal(size=_np.shape(v)) for k, v in sorted(expected.items())}
    grads = {k: array(v, dtype=_np.asarray(_host(expected[k])).dtype if dtype == "asnumpy"
                      else dtype) for k, v in start.items()}
    for k, stype in (grad_stypes or {}).items():    # a sparse gradient array starts empty
        if k in grads and stype not in (None, "default"):
            from ..nd.sparse import zeros as sparse_zeros
            grads[k] = sparse_zeros(stype, grads[k].shape, dtype=grads[k].dtype)
            start[k] = _np.zeros(grads[k].shape)
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in sym.list_arguments()}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req))
    exe = sym.bind(ctx or default_context(), args=location, args_grad=grads,
                   aux_states=aux_states, grad_req=grad_req)
    exe.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        out_grads = [_as_nd(g, dtype, array) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = {k: _as_nd(g, dtype, array) for k, g in out_grads.items()}
    elif out_grads is not None:
        out_grads = [_as_nd(out_grads, dtype, array)]
    exe.backward(out_grads)
    for name in expected:
        names = (f"EXPECTED_{name}", f"BACKWARD_{name}")
        req = grad_req.get(name, "null")
        if req == "write":
            assert_almost_equal(expected[name], grads[name], rtol, atol, names,
                                equal_nan=equal_nan)
        elif req == "add":
            assert_almost_equal(expected[name], grads[name].asnumpy() - start[name], rtol,
                                atol, names, equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(start[name], grads[name], rtol, atol, names,
                                equal_nan=equal_nan)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")
    return grads


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=_np.float32):
    """Central finite differences of the sum of the executor's first output, one element of
    each floating-point argument at a time. The outputs are differenced element by element
    before summing, so a large output does not swamp the small change."""
    from ..nd import array
    approx = {k: _np.zeros(_np.shape(v), dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = array(v, dtype=dtype)
    location = {k: _np.asarray(v, order="C") for k, v in location.items()}

    def run():
        if aux_states is not None:
            for key, val in aux_states.items():
                executor.aux_dict[key][:] = array(val, dtype=dtype)
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy()

    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        old = v.copy()
        for i in range(v.size):
            v.ravel()[i] += eps / 2.0
            executor.arg_dict[k][:] = array(v, dtype=dtype)
            f_plus = run()
            v.ravel()[i] -= eps
            executor.arg_dict[k][:] = array(v, dtype=dtype)
            f_minus = run()
            approx[k].ravel()[i] = (f_plus - f_minus).sum() / eps
            v.ravel()[i] = old.ravel()[i]
        executor.arg_dict[k][:] = array(old, dtype=dtype)
    return approx


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=_np.float32):
    """MXNet's check: the backward of make_loss(sym * projection), with a random positive
    projection, against numeric_grad of the same bound symbol; `grad_nodes` may be a dict
    of grad_req ('add' checks the sum, 'null' that the gradient was left alone)."""
    from ..nd import array
    from .. import sym as mx_sym
    from .comparison import get_tolerance
    ctx = ctx or default_context()
    location = _parse_location(sym, location, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux_states = _parse_aux_states(sym, aux_states, dtype)
    aux_npy = None if aux_states is None else {k: v.asnumpy() for k, v in aux_states.items()}
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, (list, tuple)):
        grad_nodes = list(grad_nodes)
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
        grad_nodes = list(grad_nodes)
    else:
        raise ValueError(f"grad_nodes must be a list or a dict, got {type(grad_nodes)}")
    _, out_shape, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    out = mx_sym.make_loss(sym * mx_sym.Variable("__random_proj"))
    # not too small, or too much precision is lost in the numeric gradient
    location["__random_proj"] = array(_np.random.rand(*out_shape[0]) + 0.1, dtype=dtype)
    start = {k: _np.random.normal(0, 0.01, size=location[k].shape) for k in grad_nodes}
    start["__random_proj"] = _np.random.normal(0, 0.01, size=out_shape[0])
    args_grad = {k: array(v, dtype=dtype) for k, v in start.items()}
    exe = out.bind(ctx, grad_req=grad_req, args=location, args_grad=args_grad,
                   aux_states=aux_states)
    exe.forward(is_train=True)
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (_np.float32, _np.float16) and eps < 1e-5:
        raise AssertionError(f"check_numeric_gradient: numeric_eps {eps} is too small for "
                             f"{_np.dtype(dtype).name}")
    exe.backward()
    numeric = numeric_grad(exe, location_npy, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    for name in grad_nodes:
        names = (f"NUMERICAL_{name}", f"BACKWARD_{name}")
        got = exe.grad_dict[name]
        if grad_req[name] == "write":
            assert_almost_equal(numeric[name], got, rtol, atol, names)
        elif grad_req[name] == "add":
            assert_almost_equal(numeric[name], got.asnumpy() - start[name], rtol, atol, names)
        elif grad_req[name] == "null":
            assert_almost_equal(start[name], got, rtol, atol, names)
        else:
            raise ValueError(f"Invalid grad_req {grad_req[name]} for argument {name}")


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """The outputs (NumPy) of a symbol bound to the given input arrays."""
    from ..._core.ndarray import ndarray
    args = {k: ndarray._wrap(_np.asarray(_host(v), dtype=_np.float32)) for k, v in
            inputs.items()}
    exe = sym.bind(ctx or default_context(), args=args)
    outputs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1e-4, atol=1e-4):
    """Build the net four ways (eager/hybridized, with/without autograd), give them the same
    parameters, and check their outputs, input gradients, and numpy_func's result agree."""
    from ..._core import autograd
    saved = out_ref = grads_ref = None
    for hybridize in (False, True):
        for record in ((False, True) if test_grad else (False,)):
            net = net_builder()
            net.initialize()
            inputs = [x.copy() for x in data_l]
            net(*inputs)                      # deferred shapes become known
            params = net.collect_params()
            if saved is None:
                saved = {k: p.data().asnumpy() for k, p in params.items()}
            else:
                for k, p in params.items():
                    p.set_data(saved[k])
            if hybridize:
                net.hybridize()
            if record:
                for x in inputs:
                    x.attach_grad()
                with autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if out_ref is None:
                out_ref = out.asnumpy()
                if numpy_func is not None:
                    assert_almost_equal(out_ref, numpy_func(*[x.asnumpy() for x in data_l]),
                                        rtol, atol)
            else:
                assert_almost_equal(out.asnumpy(), out_ref, rtol, atol)
            if record:
                grads = [x.grad.asnumpy() for x in inputs]
                if grads_ref is None:
                    grads_ref = grads
                for g, ref in zip(grads, grads_ref):
                    assert_almost_equal(g, ref, rtol, atol)


def _least_precise(dtypes):
    return min((_np.dtype(d) for d in dtypes), key=lambda d: d.itemsize)


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=_np.float64):
    """Run one symbol (or one per entry) bound as each entry of `ctx_list` says
    (`{'ctx': cpu(), 'data': shape, ..., 'type_dict': {'data': np.float32}}`) on the same
    random inputs, and assert that outputs and gradients agree with the most precise run
    (or `ground_truth`), with the tolerances of each run's dtype. Returns the reference."""
    from ..sym import Symbol
    from ..._core.ndarray import ndarray
    if len(ctx_list) < 2:
        raise ValueError(f"check_consistency: expected at least two runs, got {len(ctx_list)}")
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    output_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    exes = []
    for s, spec in zip(syms, ctx_list):
        spec = dict(spec)
        ctx = spec.pop("ctx", None) or default_context()
        exes.append(s.simple_bind(ctx, grad_req=grad_req, **spec))
    arg_params = dict(arg_params or {})
    aux_params = dict(aux_params or {})
    for name in sorted(exes[0].arg_dict):    # a fixed order: the same inputs for a seed
        if name not in arg_params:
            shape = exes[0].arg_dict[name].shape
            values = (_np.random.uniform(-0.92 * scale, 0.92 * scale, size=shape)
                      if use_uniform else _np.random.normal(size=shape, scale=scale))
            arg_params[name] = values.astype(rand_type)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = _np.asarray(_host(arg_params[name]), dtype=arr.dtype)
        for name, arr in exe.aux_dict.items():
            arr[:] = _np.asarray(_host(aux_params.get(name, 0)), dtype=arr.dtype)
    for exe in exes:
        exe.forward(is_train=False)
    dtypes = [_np.dtype(exe.outputs[0].dtype) for exe in exes]
    ref = int(_np.argmax([d.itemsize for d in dtypes]))

    def compare(i, name, got, want):
        try:
            assert_almost_equal(got, want, rtol, atol, (f"run {i}", f"run {ref}: {name}"),
                                equal_nan=equal_nan)
        except AssertionError:
            if raise_on_err:
                raise
    gt = ground_truth
    if gt is None:
        gt = {n: o.asnumpy() for n, o in zip(output_names, exes[ref].outputs)}
    for i, exe in enumerate(exes):
        if i != ref:
            for name, out in zip(output_names, exe.outputs):
                compare(i, name, out.asnumpy(), gt[name])
    if grad_req == "null":
        return gt
    for exe in exes:
        exe.forward(is_train=True)
    golden = [o.asnumpy().astype(_least_precise([e.outputs[k].dtype for e in exes]))
              for k, o in enumerate(exes[0].outputs)]
    for exe in exes:
        exe.backward([ndarray._wrap(g.astype(o.dtype)) for g, o in zip(golden, exe.outputs)])
    if ground_truth is None:
        gt.update({n: o.asnumpy() for n, o in zip(output_names, exes[ref].outputs)})
        gt.update({n: (g.asnumpy() if g is not None else None)
                   for n, g in zip(arg_names, exes[ref].grad_arrays)})
    for i, exe in enumerate(exes):
        if i == ref:
            continue
        pairs = list(zip(output_names, exe.outputs)) + list(zip(arg_names, exe.grad_arrays))
        for name, arr in pairs:
            if gt.get(name) is None:
                assert arr is None, f"run {i} has a gradient for {name}; run {ref} has none"
                continue
            compare(i, name, arr.asnumpy(), gt[name])
    return gt


def same_symbol_structure(sym1, sym2):
    """Whether two symbols' graphs apply the same op at every node position (by their JSON)."""
    import json
    nodes1, nodes2 = (json.loads(s.tojson())["nodes"] for s in (sym1, sym2))
    return all(a["op"] == b["op"] for a, b in zip(nodes1, nodes2))
