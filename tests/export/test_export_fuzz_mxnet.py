"""The export fuzz (test_export_fuzz.py) for files in MXNet's formats: symbol JSON and the
binary NDArray params, as MXNet 1.9.1 wrote them (tests/fixtures/mxnet/cnn-*).

Every mutation must end in a KilnError or a load that runs; a mutation that changes
nothing that matters must give MXNet's own outputs. Loads go through SymbolBlock.imports
and through Module.
"""
import json
import os
import random
import struct
from collections import namedtuple

import numpy as onp
import pytest

import kiln
from kiln import nd
from kiln.export import mxnet_params
from kiln.gluon import nn
from paths import FIXTURES

FIX = os.path.join(FIXTURES, "mxnet")
Batch = namedtuple("Batch", ["data"])


@pytest.fixture(autouse=True)
def numpy_backend(monkeypatch):
    # the fuzz is about reading files: skip compiling C for every mutated graph
    monkeypatch.setenv("KILN_BACKEND", "numpy")


@pytest.fixture(scope="module")
def original():
    sym = open(os.path.join(FIX, "cnn-symbol.json"), "rb").read()
    par = open(os.path.join(FIX, "cnn-0000.params"), "rb").read()
    io = onp.load(os.path.join(FIX, "cnn-io.npz"))
    return sym, par, io["x"], io["y"]


def _attempt(tmp, sym_bytes, par_bytes, x, y, harmless=False, module=False):
    s, p = tmp / "m-symbol.json", tmp / "m-0000.params"
    s.write_bytes(sym_bytes)
    p.write_bytes(par_bytes)
    try:
        if module:
            mod = kiln.mod.Module(kiln.sym.load(str(s)), label_names=None)
            mod.bind(data_shapes=[("data", x.shape)], for_training=False)
            mod.load_params(str(p))
            mod.forward(Batch([nd.array(x)]))
            value = mod.get_outputs()[0].asnumpy()
        else:
            block = nn.SymbolBlock.imports(str(s), ["data"], str(p))
            out = block(nd.array(x))
            value = (out[0] if isinstance(out, list) else out).asnumpy()
    except kiln.KilnError:
        return "error"
    if harmless:
        onp.testing.assert_allclose(value, y, rtol=1e-5, atol=1e-5)
    return "loaded"


@pytest.mark.parametrize("module", [False, True])
def test_truncated_and_corrupted_bytes(original, tmp_path, module):
    sym, par, x, y = original
    rng = random.Random(15 + module)
    outcomes = []
    for n in sorted({rng.randrange(len(sym)) for _ in range(25)}) + [0]:
        outcomes.append(_attempt(tmp_path, sym[:n], par, x, y, module=module))
    for n in sorted({rng.randrange(len(par)) for _ in range(40)}) + [0, 7, 8, 23, 24]:
        outcomes.append(_attempt(tmp_path, sym, par[:n], x, y, module=module))
    for _ in range(40):
        data = bytearray(sym)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        outcomes.append(_attempt(tmp_path, bytes(data), par, x, y, module=module))
    for _ in range(60):
        data = bytearray(par)
        for _ in range(rng.randint(1, 3)):
            # mostly the headers: the first array's record and the name table
            k = rng.choice([rng.randrange(64), rng.randrange(len(data) - 300, len(data))])
            data[k] = rng.randrange(256)
        outcomes.append(_attempt(tmp_path, sym, bytes(data), x, y, module=module))
    assert "error" in outcomes and "loaded" in outcomes


def _header(count=1):
    return struct.pack("<QQQ", mxnet_params.LIST_MAGIC, 0, count)


HOSTILE_PARAMS = {
    "bad list magic": struct.pack("<QQQ", 0x113, 0, 0),
    "huge count": _header(1 << 40),
    "bad array magic": _header() + struct.pack("<I", 0xDEADBEEF),
    "sparse storage": _header() + struct.pack("<Ii", mxnet_params.V2, 1),
    "rank 1000": _header() + struct.pack("<Iii", mxnet_params.V2, 0, 1000),
    "negative rank": _header() + struct.pack("<Iii", mxnet_params.V2, 0, -7),
    "huge dims": _header() + struct.pack("<Iiiqq", mxnet_params.V2, 0, 2, 1 << 40, 1 << 40),
    "negative dim": _header() + struct.pack("<Iiiq", mxnet_params.V2, 0, 1, -3),
    "unknown dtype": _header() + struct.pack("<Iiiqiii", mxnet_params.V2, 0, 1, 2, 1, 0, 99),
    "values cut short": _header() + struct.pack("<Iiiqiii", mxnet_params.V2, 0, 1, 4, 1, 0,
                                                0) + b"\0" * 8,
    "V3 without shape": _header() + struct.pack("<Iii", mxnet_params.V3, 0, -1),
    "name count differs": mxnet_params.encode([onp.ones(2, "float32")], ["a"])[:-9]
                          + struct.pack("<Q", 2) + b"",
    "huge name": mxnet_params.encode([onp.ones(2, "float32")])[:-8]
                 + struct.pack("<QQ", 1, 1 << 50),
    "trailing bytes": mxnet_params.encode([onp.ones(2, "float32")], ["a"]) + b"x",
    "repeated name": mxnet_params.encode([onp.ones(2, "float32")] * 2, ["a", "a"]),
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_PARAMS))
def test_hostile_params_headers(name, tmp_path):
    path = tmp_path / "h.params"
    path.write_bytes(HOSTILE_PARAMS[name])
    with pytest.raises(kiln.KilnError) as info:
        kiln.nd.load(str(path)) if name != "empty" else mxnet_params.read(str(path))
    assert str(path) in str(info.value) or "params" in str(info.value)


def test_bool_values_other_than_0_and_1_read_as_true():
    # a bool byte of 2 stays a bool: compiled casts read the byte, so it must be 0 or 1
    raw = bytearray(mxnet_params.encode([onp.array([True, False, True])], ["b"]))
    first = raw.index(b"\x01\x00\x01")
    raw[first] = 2
    (values,), _ = mxnet_params.parse(bytes(raw))
    assert values.dtype == onp.bool_
    assert values.view(onp.uint8).tolist() == [1, 0, 1]


def test_kiln_node_with_wrong_inputs_is_a_clear_error():
    doc = {"nodes": [{"op": "null", "name": "x", "inputs": []},
                     {"op": "kiln:relu", "name": "r", "inputs": [[0, 0, 0], [0, 0, 0]]}],
           "heads": [[1, 0, 0]]}
    symbol = kiln.sym.load_json(json.dumps(doc))
    with pytest.raises(kiln.KilnError, match="'r' \\(kiln:relu\\)"):
        symbol.eval(x=onp.ones(3, "float32"))
    with pytest.raises(kiln.KilnError, match="'r' \\(kiln:relu\\)"):
        symbol.infer_shape(x=(3,))


@pytest.mark.parametrize("dtype", ["O", "V100000000", "U5"])
def test_variable_dtype_from_a_file_must_be_one_kiln_computes_in(dtype):
    # "V100000000" made simple_bind allocate 100 MB per element of a (2, 3) input
    doc = {"nodes": [{"op": "null", "name": "x", "inputs": [],
                      "attrs": {"__dtype__": dtype, "__shape__": "(2, 3)"}},
                     {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}],
           "heads": [[1, 0, 0]]}
    symbol = kiln.sym.load_json(json.dumps(doc))
    for call in (symbol.infer_type, symbol.infer_shape, lambda: symbol.simple_bind(kiln.cpu())):
        with pytest.raises(kiln.KilnError, match="variable 'x': dtype .* is not supported"):
            call()


def _json_mutations(doc, rng):
    nodes = doc["nodes"]
    ops = [k for k, n in enumerate(nodes) if n["op"] != "null"]
    bad_values = ["(-1, 3)", "(0, 0)", "100000000000", "-5", "nan", "((((", "()", "relu",
                  "True", "1e308", "(3, 3, 3, 3, 3)", "", "[1, 2]", "None"]
    for _ in range(40):
        d = json.loads(json.dumps(doc))
        k = rng.choice(ops)
        attrs = d["nodes"][k].setdefault("attrs", {})
        key = rng.choice(sorted(attrs) or ["p"])
        attrs[key] = rng.choice(bad_values)
        yield d
    for bad in ([99, 0, 0], [-1, 0, 0], [0, 5, 0], "x", [0], None, [1.5, 0, 0]):
        d = json.loads(json.dumps(doc))
        d["nodes"][ops[0]]["inputs"][0] = bad
        yield d
    for bad in ([], [[99, 0, 0]], "x", [[0, 3, 0]]):
        d = json.loads(json.dumps(doc))
        d["heads"] = bad
        yield d
    d = json.loads(json.dumps(doc))
    d["nodes"][ops[0]]["op"] = "NoSuchOp"
    yield d
    d = json.loads(json.dumps(doc))
    d["nodes"][0]["attrs"] = {"__shape__": "(100000000000, 100000000)"}
    yield d
    d = json.loads(json.dumps(doc))
    d["nodes"][ops[0]]["attrs"] = ["not", "a", "dict"]
    yield d
    d = json.loads(json.dumps(doc))
    d["nodes"][ops[0]]["attr"] = {}
    yield d


@pytest.mark.parametrize("module", [False, True])
def test_json_field_mutations(original, tmp_path, module):
    sym, par, x, y = original
    doc = json.loads(sym)
    rng = random.Random(7 + module)
    outcomes = [_attempt(tmp_path, json.dumps(d).encode(), par, x, y, module=module)
                for d in _json_mutations(doc, rng)]
    assert outcomes.count("error") >= 15


def test_unknown_op_is_named(original, tmp_path):
    sym, par, x, y = original
    doc = json.loads(sym)
    doc["nodes"][3]["op"] = "SpatialTransformer"
    (tmp_path / "s.json").write_text(json.dumps(doc))
    with pytest.raises(kiln.KilnError, match="SpatialTransformer"):
        kiln.sym.load(str(tmp_path / "s.json"))


def test_harmless_rewrites_load_exactly(original, tmp_path):
    """Older attribute keys ('attr', 'param'), no node_row_ptr/arg_nodes, a 2.x version."""
    sym, par, x, y = original
    for key in ("attr", "param"):
        doc = json.loads(sym)
        for n in doc["nodes"]:
            if "attrs" in n:
                n[key] = n.pop("attrs")
        doc.pop("node_row_ptr")
        doc.pop("arg_nodes")
        doc["attrs"]["mxnet_version"] = ["int", 20000]
        assert _attempt(tmp_path, json.dumps(doc).encode(), par, x, y, harmless=True) \
            == "loaded"


def test_v1_and_v3_records_read():
    """MXNet 0.9-1.x's V1 record (no storage type) and MXNet 2's V3 (a rank-0 scalar)."""
    v1 = (_header() + struct.pack("<Iiqq", mxnet_params.V1, 2, 1, 2) + struct.pack("<iii", 1, 0, 0)
          + onp.array([[1.5, -2.0]], "<f4").tobytes() + struct.pack("<Q", 0))
    v3 = (_header() + struct.pack("<Iii", mxnet_params.V3, 0, 0) + struct.pack("<iii", 1, 0, 6)
          + struct.pack("<q", 42) + struct.pack("<QQ", 1, 1) + b"s")
    arrays, names = mxnet_params.parse(v1)
    assert names is None and arrays[0].tolist() == [[1.5, -2.0]]
    arrays, names = mxnet_params.parse(v3)
    assert names == ["s"] and arrays[0].shape == () and arrays[0].dtype == onp.int64 \
        and int(arrays[0]) == 42


def _with_tile_head(sym_bytes, reps):
    doc = json.loads(sym_bytes)
    head = doc["heads"][0][0]
    doc["nodes"].append({"op": "tile", "name": "hostile_tile", "attrs": {"reps": str(reps)},
                         "inputs": [[head, 0, 0]]})
    doc["heads"] = [[len(doc["nodes"]) - 1, 0, 0]]
    doc.pop("node_row_ptr", None)
    return json.dumps(doc).encode()


def test_attributes_cannot_allocate_past_the_cap_when_run_eagerly(original, tmp_path):
    """A file's tile reps (one_hot depth, UpSampling scale, ...) are checked by a
    shape-only trace before an eager run allocates anything."""
    sym, par, x, y = original
    hostile = _with_tile_head(sym, (100000, 100000))
    assert _attempt(tmp_path, hostile, par, x, y) == "error"
    s = tmp_path / "h-symbol.json"
    s.write_bytes(hostile)
    loaded = kiln.sym.load(str(s))
    with pytest.raises(kiln.KilnError, match="elements"):
        params = nd.load(os.path.join(FIX, "cnn-0000.params"))
        loaded.eval(data=x, **{n.split(":", 1)[-1]: v for n, v in params.items()})
    # the same node with sane reps runs
    fine = _with_tile_head(sym, (2, 1))
    assert _attempt(tmp_path, fine, par, x, y) == "loaded"
