"""The pass pipelines (kiln/graph/passes/pipeline.py): each named pipeline runs the passes
its table lists, in order (a step's `then` pipeline only when the step changed the graph),
and leaves the graph's values as they were."""
import numpy as onp
import pytest

from kiln._core.ir import Graph
from kiln.graph.passes.pipeline import PIPELINES, Step, run_pipeline
from test_layout_pass import inp, node, values, arrays_for, conv_bias_relu, CONV, POOL

GENERIC = ["eliminate_dead_code", "fold_constants", "eliminate_common_subexpressions",
           "simplify", "gather_pieces", "scan_grad_window",
           "scan_grad_shared_sums", "eliminate_dead_code",
           "group_elementwise"]


def ALL(node):       # every heavy op has a kernel
    return True


def NONE(node):
    return False


def lone_conv():
    """conv + bias + relu: the epilogue folds; channels-last does not pay for one conv."""
    x, w, b = inp((2, 3, 6, 6)), inp((4, 3, 3, 3), "w"), inp((4,), "b")
    return Graph([x, w, b], [], [conv_bias_relu(x, w, b)])


def conv_chain():
    """Three convs and a pool: channels-last pays."""
    x, w = inp((2, 4, 8, 8)), inp((4, 4, 3, 3), "w")
    y = x
    for _ in range(3):
        y = node("relu", node("conv", y, w, **CONV))
    return Graph([x, w], [], [node("pool", y, **POOL)])


def backward_like():
    """Outputs linear in two incoming gradients, the second absent (zero)."""
    x, g0, g1 = inp((3,)), inp((3,), "g0"), inp((3,), "g1")
    out = node("add", node("multiply", g0, x), node("multiply", g1, node("exp", x)))
    return Graph([x, g0, g1], [], [out]), {"cotangents": [g0, g1], "absent": [g1]}


# (pipeline, graph builder, options, the passes run, in order)
CASES = [
    ("generic", lone_conv, {}, GENERIC),
    ("pruned-backward", None, None, ["prune_zero_cotangents"] + GENERIC),
    ("c-program", lone_conv, {"takes": ALL},
     ["expand_heavy_ops", "fuse_attention", "fuse_normalization",
      "channels_last_where_it_pays", "fuse_conv_epilogues"] + GENERIC),
    ("c-program", lone_conv, {"takes": NONE},
     ["expand_heavy_ops"] + GENERIC + ["fuse_attention", "fuse_normalization",
                                       "channels_last_where_it_pays", "fuse_conv_epilogues"]),
    ("c-program", conv_chain, {"takes": ALL},
     ["expand_heavy_ops", "fuse_attention", "fuse_normalization",
      "channels_last_where_it_pays"] + GENERIC + ["fuse_conv_epilogues"]),
    ("c-joint-layout", lone_conv, {"takes": ALL}, ["channels_last_where_it_pays"]),
    ("c-joint-layout", conv_chain, {"takes": ALL}, ["channels_last_where_it_pays"] + GENERIC),
    ("standalone-c", lone_conv, {}, ["expand_heavy_ops"] + GENERIC),
    ("onnx", conv_chain, {"takes": lambda n: n.op == "conv"}, ["expand_heavy_ops"]),
    # precision passes change values by design (tests/graph/test_amp.py, test_quantize.py):
    # here they are asked to leave the graph alone (nothing allowed; no layer to quantize)
    ("amp-bfloat16", lone_conv, {"amp_allow": frozenset()}, ["to_bfloat16"]),
    ("int8", lone_conv, {"int8_layers": {}}, ["quantize_layers"]),
]


def listed(name):
    """The steps of a pipeline as its table lists them, named pipelines expanded."""
    out = []
    for step in PIPELINES[name]:
        out += listed(step) if isinstance(step, str) else [step]
    return out


def record_passes(monkeypatch):
    """Every pass in the tables, wrapped to append its function name to the list returned."""
    calls = []
    for steps in PIPELINES.values():
        for step in steps:
            if isinstance(step, str):
                continue
            real = getattr(step.module, step.function)
            if getattr(real, "recorded", False):
                continue

            def wrapped(*args, _real=real, _name=step.function, **kwargs):
                calls.append(_name)
                return _real(*args, **kwargs)
            wrapped.recorded = True
            monkeypatch.setattr(step.module, step.function, wrapped)
    return calls


def without_reruns(calls, name):
    """calls without the generic runs that follow a step with `then` (it changed the graph)."""
    then_steps = {s.function for s in listed(name) if s.then is not None}
    out, k = [], 0
    while k < len(calls):
        out.append(calls[k])
        rerun = calls[k] in then_steps and calls[k + 1:k + 1 + len(GENERIC)] == GENERIC
        k += 1 + (len(GENERIC) if rerun else 0)
    return out


def build(builder):
    if builder is None:
        return backward_like()
    return builder(), None


@pytest.mark.parametrize("name, builder, options, expected", CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_each_pipeline_runs_its_listed_passes_in_order(monkeypatch, name, builder, options,
                                                      expected):
    graph, extra = build(builder)
    options = extra if options is None else options
    calls = record_passes(monkeypatch)
    out = run_pipeline(name, graph, **options)
    assert calls == expected
    assert without_reruns(calls, name) == [s.function for s in listed(name)]
    assert isinstance(out, Graph)


def test_every_pipeline_is_covered_and_names_real_passes():
    assert {c[0] for c in CASES} == set(PIPELINES)
    for name in PIPELINES:
        for step in listed(name):
            assert callable(getattr(step.module, step.function)), step.title
            assert step.then is None or step.then in PIPELINES


@pytest.mark.parametrize("name, builder, options, expected", CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_pipelines_keep_the_graph_values(name, builder, options, expected):
    graph, extra = build(builder)
    arrays = arrays_for(*graph.inputs)
    if extra is not None:       # pruned-backward: the absent gradient is zero
        arrays[2][...] = 0
        options = extra
    out = run_pipeline(name, graph, **options)
    for a, b in zip(values(graph, arrays), values(out, arrays)):
        assert a.shape == b.shape
        onp.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_debug_prints_the_graph_after_every_step(monkeypatch, capsys):
    monkeypatch.setenv("KILN_DEBUG", "1")
    run_pipeline("c-program", lone_conv(), takes=ALL)
    err = capsys.readouterr().err
    assert "[kiln] c-program pipeline on" in err and "[kiln] generic pipeline on" in err
    for step in listed("c-program") + listed("generic"):
        if type(step) is Step:
            assert f"after {step.title}" in err
    run_pipeline("generic", backward_like()[0])     # elementwise ops: a fusion group
    assert "[kiln] fusion groups: [" in capsys.readouterr().err


def test_unknown_pipeline_is_a_key_error():
    with pytest.raises(KeyError):
        run_pipeline("no-such-pipeline", lone_conv())
