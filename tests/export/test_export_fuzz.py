"""Hostile or damaged export files: every mutation ends in a KilnError or a correct load.

Seeded mutations of an exported CNN (it has constants) cover truncation, flipped and
random bytes, edited JSON fields and edited params entries; a load that succeeds must run
and, for mutations that change nothing that matters, give the original outputs.
"""
import copy
import io
import json
import random
import zipfile

import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.gluon import nn

from export_models import build


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    net, x = build("cnn")
    sym, par = net.export(str(root / "cnn"))
    y = net(np.array(x)).asnumpy()
    return open(sym, "rb").read(), open(par, "rb").read(), x, y, root


def _attempt(tmp, sym_bytes, par_bytes, x, y, harmless=False):
    """'error' or 'loaded'; anything but a KilnError propagates and fails the test."""
    s, p = tmp / "m-symbol.json", tmp / "m-0000.params"
    s.write_bytes(sym_bytes)
    p.write_bytes(par_bytes)
    try:
        block = nn.SymbolBlock.imports(str(s), ["data"], str(p))
        out = block(np.array(x))
        out = out[0] if isinstance(out, list) else out
        value = out.asnumpy()
    except kiln.KilnError:
        return "error"
    if harmless:
        onp.testing.assert_allclose(value, y, rtol=1e-6, atol=1e-6)
    return "loaded"


def test_truncated_and_corrupted_bytes(original, tmp_path):
    sym, par, x, y, _ = original
    rng = random.Random(1234)
    outcomes = []
    for n in sorted({rng.randrange(len(sym)) for _ in range(80)}) + [0]:
        outcomes.append(_attempt(tmp_path, sym[:n], par, x, y))
    for n in sorted({rng.randrange(len(par)) for _ in range(60)}) + [0]:
        outcomes.append(_attempt(tmp_path, sym, par[:n], x, y))
    for _ in range(100):
        data = bytearray(sym)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        outcomes.append(_attempt(tmp_path, bytes(data), par, x, y))
    for _ in range(60):
        data = bytearray(par)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        outcomes.append(_attempt(tmp_path, sym, bytes(data), x, y))
    assert len(outcomes) > 250 and "error" in outcomes


def _json_mutations(doc, rng):
    """Yield (description, mutated document, harmless?)."""
    nodes = doc["nodes"]
    compute = [k for k, n in enumerate(nodes) if n["op"] not in ("input", "param", "const")]
    with_attrs = [k for k in compute if nodes[k]["attrs"]]
    bad_values = [{"str": "x"}, {"int": 10 ** 30}, {"int": -5}, {"float": "nan"}, [],
                  {"tuple": []}, {"tuple": [{"str": "a"}]}, {"none": None}, {"bool": True},
                  {"float": 1e308}, {"list": [{"int": 1}]}, {"dtype": "object"}, {"eval": "1"},
                  {"int": 1, "str": "x"}, {"tuple": [{"tuple": [{"tuple": [[[[]]]]}]}]}]
    bad_shapes = [[-1], [10 ** 12, 10 ** 12], [1.5], ["2"], None, [2] * 40, [0], {}, [True]]
    bad_indices = [-1, 10 ** 9, "0", 1.0, None, True]
    for _ in range(40):
        k = rng.choice(compute)
        yield "op renamed", _edit(doc, ["nodes", k, "op"],
                                  rng.choice(["conv2d", "__import__", "", "add", "exp",
                                              "windows", "input", "param", "matmul"])), False
    for _ in range(40):
        k = rng.choice(compute)
        j = rng.randrange(len(nodes[k]["inputs"]) + 1)
        d = copy.deepcopy(doc)
        ins = d["nodes"][k]["inputs"]
        value = rng.choice(bad_indices + [k, k + 1, len(nodes), rng.randrange(k)])
        if j < len(ins):
            ins[j] = value
        else:
            ins.append(value)
        yield "input index", d, False
    for _ in range(40):
        k = rng.randrange(len(nodes))
        yield "shape", _edit(doc, ["nodes", k, "shape"], rng.choice(bad_shapes)), False
    for _ in range(25):
        k = rng.randrange(len(nodes))
        yield "dtype", _edit(doc, ["nodes", k, "dtype"],
                             rng.choice(["float64", "int32", "object", "V8", "<f4", 3, None,
                                         "bool", "float16"])), False
    for _ in range(50):
        k = rng.choice(with_attrs)
        name = rng.choice(sorted(nodes[k]["attrs"]) + ["bogus"])
        yield "attr", _edit(doc, ["nodes", k, "attrs", name], rng.choice(bad_values)), False
    for field, value in (("format_version", 2), ("format_version", 99), ("format_version", 0),
                         ("format_version", "1"), ("format_version", True),
                         ("format", "mxnet"), ("nodes", {}), ("nodes", []), ("inputs", []),
                         ("outputs", []), ("outputs", [{"node": 10 ** 6}]),
                         ("outputs", [{"node": -1}]), ("inputs", [{"name": "x", "node": 0}]),
                         ("kiln_version", 5), ("name", ["x"])):
        yield f"top-level {field}", _edit(doc, [field], value), False
    d = copy.deepcopy(doc)
    del d["nodes"][rng.choice(compute)]["attrs"]
    yield "missing attrs", d, False
    # harmless edits: the file must still load and compute the same outputs
    yield "kiln_version", _edit(doc, ["kiln_version"], "9.9.9"), True
    d = copy.deepcopy(doc)
    for k in compute:
        d["nodes"][k]["name"] = f"renamed{k}"
    yield "node names", d, True


def _edit(doc, path, value):
    d = copy.deepcopy(doc)
    target = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return d


def test_edited_json_fields(original, tmp_path):
    sym, par, x, y, _ = original
    doc = json.loads(sym)
    rng = random.Random(99)
    results = {}
    for what, mutated, harmless in _json_mutations(doc, rng):
        text = json.dumps(mutated).encode()
        outcome = _attempt(tmp_path, text, par, x, y, harmless)
        results.setdefault(what, []).append(outcome)
        if harmless:
            assert outcome == "loaded", what
    assert sum(len(v) for v in results.values()) > 200
    # these can never load: the reader must have refused every one
    for what in ("shape", "top-level format", "input index"):
        assert set(results.get(what, ["error"])) == {"error"}, what


def _npz(entries):
    buf = io.BytesIO()
    onp.savez(buf, **entries)
    return buf.getvalue()


def test_edited_params(original, tmp_path):
    sym, par, x, y, root = original
    entries = dict(onp.load(io.BytesIO(par)))
    names = sorted(entries)
    cases = []
    for name in names:
        v = entries[name]
        cases.append({**entries, name: onp.zeros(v.shape + (2,), v.dtype)})
        cases.append({**entries, name: v.astype("float64")})
        cases.append({**entries, name: v.astype("int32")})
        cases.append({k: w for k, w in entries.items() if k != name})
    cases.append({**entries, "extra.weight": onp.zeros(3, "float32")})
    cases.append({**entries, "__const__.9999": onp.zeros(3, "float32")})
    for case in cases:
        assert _attempt(tmp_path, sym, _npz(case), x, y) == "error"
    assert _attempt(tmp_path, sym, _npz(entries), x, y, harmless=True) == "loaded"


class _Boom:
    def __reduce__(self):
        return (pytest.fail, ("the loader unpickled an object",))


def test_pickled_params_are_refused_without_unpickling(original, tmp_path):
    sym, par, x, y, _ = original
    entries = dict(onp.load(io.BytesIO(par)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, v in entries.items():
            if k == "0.weight":
                continue
            item = io.BytesIO()
            onp.save(item, v)
            zf.writestr(k + ".npy", item.getvalue())
        item = io.BytesIO()
        onp.save(item, onp.array([_Boom()], dtype=object), allow_pickle=True)
        zf.writestr("0.weight.npy", item.getvalue())
    with pytest.raises(kiln.KilnError, match="pickle|objects"):
        nn.SymbolBlock.imports(*_write(tmp_path, sym, buf.getvalue()))
    # load_parameters on the original class refuses it too
    from export_models import cnn
    p = tmp_path / "evil.params"
    p.write_bytes(buf.getvalue())
    with pytest.raises(kiln.KilnError):
        cnn().load_parameters(str(p))


def _write(tmp, sym, par):
    (tmp / "e-symbol.json").write_bytes(sym)
    (tmp / "e-0000.params").write_bytes(par)
    return str(tmp / "e-symbol.json"), ["data"], str(tmp / "e-0000.params")


def test_huge_declared_shape_is_refused_before_allocating(original, tmp_path):
    sym, par, x, y, _ = original
    doc = json.loads(sym)
    k = next(i for i, n in enumerate(doc["nodes"]) if n["op"] == "param")
    doc["nodes"][k]["shape"] = [1 << 20, 1 << 20, 1 << 20]
    with pytest.raises(kiln.KilnError, match="cap"):
        nn.SymbolBlock.imports(*_write(tmp_path, json.dumps(doc).encode(), par))
    deep = b"[" * 100000 + b"]" * 100000
    with pytest.raises(kiln.KilnError):
        nn.SymbolBlock.imports(*_write(tmp_path, deep, par))
