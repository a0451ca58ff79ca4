"""Exports with symbolic sizes: the symbol file (format version 2) records the symbols,
their guards and size expressions; SymbolBlock.imports serves every size the guards
accept and names the guard that refuses one; hostile size expressions are KilnErrors."""
import copy
import json
import random

import numpy as onp
import pytest

from kiln import np, gluon
from kiln._core.base import KilnError
from kiln._core.symdim import SymInt
from kiln.export import symexpr
from kiln.export.symbol import parse_symbol, read_symbol

from dynamic_models import model

SIZES = ((2, 3), (1, 1), (3, 5), (7, 2), (1, 4))      # (batch, sequence length)


def _export(kind, tmp_path, **export_kwargs):
    net, axes, shape = model(kind)
    net.hybridize(backend="numpy")
    net(np.random.normal(size=shape(2, 4)))
    sym, par = net.export(str(tmp_path / kind), dynamic_axes=export_kwargs.get("axes", axes))
    return net, shape, sym, par


@pytest.mark.parametrize("kind", ["mlp", "cnn", "encoder"])
def test_symbolblock_serves_three_sizes(kind, tmp_path):
    net, shape, sym, par = _export(kind, tmp_path)
    doc = json.load(open(sym))
    assert doc["format_version"] == 2 and "batch" in doc["symbols"]
    assert doc["inputs"][0]["shape"][0] == "batch"
    block = gluon.nn.SymbolBlock.imports(sym, ["data"], par)
    for hybrid in (False, True):
        if hybrid:
            block.hybridize(backend="numpy")
        for b, s in SIZES:
            x = np.random.normal(size=shape(b, s))
            onp.testing.assert_allclose(block(x).asnumpy(), net(x).asnumpy(), rtol=1e-5,
                                        atol=1e-5)


def test_mlp_serves_batch_one(tmp_path):
    # a bias added to a symbolic batch needs no guard (broadcasting it is the same size)
    net, shape, sym, par = _export("mlp", tmp_path)
    assert read_symbol(sym).shape_env.guards == []
    block = gluon.nn.SymbolBlock.imports(sym, ["data"], par)
    x = np.random.normal(size=shape(1, 1))
    onp.testing.assert_allclose(block(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-6)


def test_default_export_follows_the_blocks_programs(tmp_path):
    net, axes, shape = model("mlp")
    net.hybridize(backend="numpy", dynamic_axes={"x": {0: "n"}})
    net(np.random.normal(size=shape(3, 0)))
    sym, _ = net.export(str(tmp_path / "m"))
    assert json.load(open(sym))["inputs"][0]["shape"] == ["n", 12]
    # {} fixes every size: a version-1 file, as before
    sym, _ = net.export(str(tmp_path / "fixed"), dynamic_axes={})
    doc = json.load(open(sym))
    assert doc["format_version"] == 1 and doc["inputs"][0]["shape"] == [3, 12]
    assert "symbols" not in doc


def test_default_policy_exports_symbolic_once_sizes_varied(tmp_path):
    net, axes, shape = model("mlp")
    net.hybridize(backend="numpy")
    for b in (2, 5, 7):
        net(np.random.normal(size=shape(b, 0)))
    sym, par = net.export(str(tmp_path / "m"))
    doc = json.load(open(sym))
    assert doc["format_version"] == 2 and isinstance(doc["inputs"][0]["shape"][0], str)
    block = gluon.nn.SymbolBlock.imports(sym, ["data"], par)
    x = np.random.normal(size=shape(11, 0))
    onp.testing.assert_allclose(block(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-6)


def test_static_block_exports_fixed_sizes(tmp_path):
    net, axes, shape = model("mlp")
    net.hybridize(backend="numpy", static_shape=True)
    net(np.random.normal(size=shape(2, 0)))
    sym, par = net.export(str(tmp_path / "m"))
    assert json.load(open(sym))["format_version"] == 1
    block = gluon.nn.SymbolBlock.imports(sym, ["data"], par)
    with pytest.raises(KilnError, match="exported signature"):
        block(np.ones(shape(3, 0)))


class Pairs(gluon.HybridBlock):
    def forward(self, x):
        return x.reshape(-1, 8).sum(axis=1)


def test_a_failing_guard_is_named(tmp_path):
    net = Pairs()
    net.hybridize(backend="numpy")
    net(np.ones((4, 4)))
    sym, par = net.export(str(tmp_path / "p"), dynamic_axes={0: {0: "rows"}})
    block = gluon.nn.SymbolBlock.imports(sym, ["data"], par)
    onp.testing.assert_allclose(block(np.ones((6, 4))).asnumpy(), onp.full(3, 8.0))
    with pytest.raises(KilnError, match=r"rows=3.*guard.*rows"):
        block(np.ones((3, 4)))


def test_a_named_axis_the_trace_pins_is_an_error(tmp_path):
    net, axes, shape = model("mlp")
    net.hybridize(backend="numpy")
    net(np.ones(shape(2, 0)))
    with pytest.raises(KilnError, match="features"):
        net.export(str(tmp_path / "m"), dynamic_axes={"data": {1: "features"}})


def test_dynamic_true_keeps_only_the_free_sizes(tmp_path):
    net, axes, shape = model("mlp")
    net.hybridize(backend="numpy", dynamic=True)
    net(np.ones(shape(2, 0)))
    sym, par = net.export(str(tmp_path / "m"))
    dims = json.load(open(sym))["inputs"][0]["shape"]
    assert isinstance(dims[0], str) and dims[1] == 12   # the feature size was pinned


# ---- the expression grammar ----------------------------------------------------------------

def _random_expr(rng, names, depth=0):
    if depth > 4 or rng.random() < 0.3:
        return ("sym", rng.choice(names)) if rng.random() < 0.6 else \
            ("const", rng.randrange(-50, 1000))
    op = rng.choice(["+", "-", "*", "//", "%"])
    right = _random_expr(rng, names, depth + 1)
    if op in ("//", "%") and right == ("const", 0):
        right = ("const", 7)
    left = _random_expr(rng, names, depth + 1)
    if left[0] == right[0] == "const":      # kiln folds those into one constant
        left = ("sym", rng.choice(names))
    return (op, left, right)


def test_expressions_round_trip():
    rng = random.Random(0)
    names = {"batch": 3, "seq_len": 5, "_n2": 1}
    for _ in range(500):
        expr = _random_expr(rng, sorted(names))
        if expr[0] == "const":
            continue
        assert symexpr.parse(symexpr.to_text(expr), names, "t") == expr


HOSTILE = [
    "", " ", "batch +", "+ batch", "(batch", "batch)", "((batch)", "batch batch", "2 + 3",
    "7", "batch ** 2", "batch / 2", "batch // 0", "batch % 0", "batch.real", "__import__",
    "__import__('os').system('x')", "eval(batch)", "batch[0]", "batch, 2", "1e5 * batch",
    "0x10 * batch", "batch * 1" + "0" * 30, "--batch", "- batch", "batch\n+ 1", "batch\t",
    "\u0663 * batch", "b\u00e4tch", "unknown + 1", "batch * seq", "(" * 200 + "batch" +
    ")" * 200, "batch + " * 600 + "1", "x" * 100, "batch # comment", "batch;", "'batch'",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_expressions_are_kiln_errors(text):
    with pytest.raises(KilnError):
        symexpr.parse(text, {"batch": 2, "x" * 100: 1}, "test")


@pytest.mark.parametrize("value", [None, 3, 2.5, ["batch"], {"sym": "batch"}, True])
def test_a_size_expression_must_be_text(value):
    with pytest.raises(KilnError):
        symexpr.parse(value, {"batch": 2}, "test")


def test_symbol_names_are_checked_when_written():
    with pytest.raises(KilnError, match="symbol"):
        symexpr.to_text(("sym", "batch size"))
    assert symexpr.to_text((SymInt.symbol("batch", 2) * 4).expr) == "(batch * 4)"


# ---- hostile files -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cnn_doc(tmp_path_factory):
    net, shape, sym, par = _export("cnn", tmp_path_factory.mktemp("cnn"))
    return json.load(open(sym))


def _node_with_sym_attr(doc):
    for k, n in enumerate(doc["nodes"]):
        if "sym" in json.dumps(n["attrs"]):
            return k
    raise AssertionError("no symbolic attribute")


def _edits(doc):
    k_attr = _node_with_sym_attr(doc)
    k_param = next(k for k, n in enumerate(doc["nodes"]) if n["op"] == "param")
    k_last = len(doc["nodes"]) - 1
    yield "hint negative", ["symbols", "batch", "hint"], -1
    yield "hint text", ["symbols", "batch", "hint"], "2"
    yield "hint huge", ["symbols", "batch", "hint"], 1 << 60
    yield "symbols list", ["symbols"], ["batch"]
    yield "symbol bad name", ["symbols"], {"bat ch": {"hint": 2}}
    yield "symbol unbound", ["symbols"], {"batch": {"hint": 2}, "other": {"hint": 3}}
    yield "too many symbols", ["symbols"], {f"s{i}": {"hint": 1} for i in range(100)}
    yield "no symbols", ["symbols"], {}
    yield "guards object", ["guards"], {}
    yield "guard bad op", ["guards"], [{"lhs": "batch", "op": "=>", "rhs": 1, "holds": True,
                                        "where": ""}]
    yield "guard false at hints", ["guards"], [{"lhs": "batch", "op": "==", "rhs": 5,
                                                "holds": True, "where": ""}]
    yield "guard float", ["guards"], [{"lhs": 2.5, "op": "==", "rhs": 1, "holds": False,
                                       "where": ""}]
    yield "guard code", ["guards"], [{"lhs": "__import__('os')", "op": "==", "rhs": 1,
                                      "holds": False, "where": ""}]
    yield "guard holds text", ["guards"], [{"lhs": "batch", "op": "==", "rhs": 1,
                                            "holds": "no", "where": ""}]
    yield "input expression", ["nodes", 0, "shape", 0], "(batch * 2)"
    yield "input unknown symbol", ["nodes", 0, "shape", 0], "nobody"
    yield "param symbolic", ["nodes", k_param, "shape", 0], "batch"
    yield "shape differs", ["nodes", k_last, "shape", 0], "(batch + 1)"
    yield "shape constant text", ["nodes", k_last, "shape", 0], "5"
    yield "attr sym int", ["nodes", k_attr, "attrs"], {"shape": {"sym": 3}}
    yield "attr sym unknown", ["nodes", k_attr, "attrs"], {"shape": {"tuple": [
        {"sym": "nobody"}, {"int": 24}]}}
    yield "attr sym wrong", ["nodes", k_attr, "attrs"], {"shape": {"tuple": [
        {"sym": "(batch * 2)"}, {"int": 24}]}}
    yield "output shape differs", ["outputs", 0, "shape", 0], "(batch * 1)"
    yield "version 1 with symbols", ["format_version"], 1


def _edited(doc, path, value):
    d = copy.deepcopy(doc)
    target = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return d


def test_hostile_symbolic_files_are_kiln_errors(cnn_doc):
    parse_symbol(json.dumps(cnn_doc))     # the unedited file loads
    for what, path, value in _edits(cnn_doc):
        with pytest.raises(KilnError):
            parse_symbol(json.dumps(_edited(cnn_doc, path, value)), what)
            pytest.fail(f"{what}: the edited file loaded")
