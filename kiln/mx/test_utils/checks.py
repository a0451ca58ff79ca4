"""mx.test_utils' checks of symbols and blocks: forward, backward and numeric gradients of a
bound symbol, one symbol across dtypes (check_consistency), and Gluon's eager == hybridized."""
import numpy as _np

from ..._core.context import cpu
from .comparison import _host, assert_almost_equal, default_context


def _bind(sym, location, aux_states, grad_req="write"):
    from ..._core.ndarray import ndarray
    names = sym.list_arguments()
    if isinstance(location, (list, tuple)):
        location = dict(zip(names, location))
    args = {k: ndarray._wrap(_np.asarray(_host(v), dtype=_np.float32)) for k, v in
            location.items()}
    aux = None
    if aux_states is not None:
        aux_names = sym.list_auxiliary_states()
        if isinstance(aux_states, (list, tuple)):
            aux_states = dict(zip(aux_names, aux_states))
        aux = {k: ndarray._wrap(_np.asarray(_host(v), dtype=_np.float32))
               for k, v in aux_states.items()}
    grads = {k: ndarray._wrap(_np.zeros_like(v._data)) for k, v in args.items()}
    return sym.bind(cpu(), args=args, args_grad=grads, grad_req=grad_req, aux_states=aux)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=_np.float32):
    """Bind `sym` to the arrays of `location`, run it forward in predict mode and assert that its
    outputs are close to `expected`."""
    exe = _bind(sym, location, aux_states)
    outputs = [o.asnumpy() for o in exe.forward(is_train=False)]
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, out, exp in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(out, exp, rtol, atol, ("forward", name), equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=_np.float32):
    """Bind `sym` to the arrays of `location`, run it forward and backward with `out_grads`, and
    assert that the arguments' gradients are close to `expected`."""
    from ..._core.ndarray import ndarray
    exe = _bind(sym, location, aux_states, grad_req)
    exe.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    exe.backward([ndarray._wrap(_np.asarray(_host(g), dtype=_np.float32))
                  for g in out_grads])
    grads = dict(zip(sym.list_arguments(), (g.asnumpy() for g in exe.grad_arrays)))
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    for name, exp in expected.items():
        assert_almost_equal(grads[name], exp, rtol, atol, ("backward", name),
                            equal_nan=equal_nan)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=_np.float32):
    """Backward of sum(output * random projection) against central finite differences,
    computed in float64 on the same symbol."""
    names = sym.list_arguments()
    if isinstance(location, (list, tuple)):
        location = dict(zip(names, location))
    location = {k: _np.asarray(_host(v), dtype=_np.float64) for k, v in location.items()}
    grad_nodes = list(grad_nodes or names)
    eps = numeric_eps or 1e-3
    exe = _bind(sym, location, aux_states)
    out = exe.forward(is_train=use_forward_train)[0].asnumpy()
    proj = _np.random.RandomState(0).normal(0, 1, out.shape).astype(_np.float32)
    from ..._core.ndarray import ndarray
    exe.backward([ndarray._wrap(proj)])
    symbolic = dict(zip(names, (g.asnumpy() for g in exe.grad_arrays)))

    def objective(values):
        e = _bind(sym, values, aux_states)
        return float((e.forward(is_train=use_forward_train)[0].asnumpy() * proj).sum())

    for name in grad_nodes:
        base = location[name]
        numeric = _np.zeros_like(base)
        for k in range(base.size):
            hi, lo = base.copy(), base.copy()
            hi.flat[k] += eps / 2
            lo.flat[k] -= eps / 2
            numeric.flat[k] = (objective({**location, name: hi})
                               - objective({**location, name: lo})) / eps
        assert_almost_equal(symbolic[name], numeric, rtol or 1e-2, atol or 1e-3,
                            (f"symbolic grad of {name}", "numeric grad"))


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
