"""Every load path reads files with bounded memory and checks declared sizes before it
allocates: nd.load, npx.load, sym.load, Module.load, load_checkpoint, SymbolBlock.imports,
load_parameters, ParameterDict.load, Trainer.load_states, in kiln's npz and MXNet's binary
format. A hostile header (a huge, negative or overflowing shape, data cut short) or a file
past a cap is a KilnError naming the file and what was declared against the cap: never a
MemoryError, never a crash, never a large allocation (checked under an address-space
limit, in a subprocess).
"""
import io
import os
import struct
import subprocess
import sys
import textwrap
import zipfile

import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.gluon import nn
from kiln.npx import io as npx_io

from paths import ROOT

# ---- under an address-space limit ---------------------------------------------------------

# writes one small file per load path, limits the address space, then loads each file;
# prints "ok NAME" per load that worked and "fail NAME ERROR" per one that did not
SCRIPT = textwrap.dedent("""
    import os, resource, sys
    import numpy as onp
    import kiln
    from kiln import np, npx, mx, sym as ksym, mod, model
    from kiln.gluon import nn, Trainer
    from kiln.export import mxnet_params

    d, limit = sys.argv[1], sys.argv[2]
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net.initialize()
    net.hybridize()
    x = np.ones((1, 3))
    net(x)
    net.export(os.path.join(d, "k"))                       # k-symbol.json, k-0000.params
    net.save_parameters(os.path.join(d, "net.params"))
    names = list(net.collect_params())
    mxnet_params.write(os.path.join(d, "mx.params"),
                       [p.data().asnumpy() for p in net.collect_params().values()], names)
    npx.save(os.path.join(d, "a.npz"), [np.ones(3)])
    mx.nd.save(os.path.join(d, "a.nd"), {"w": mx.nd.ones((2, 2))})
    trainer = Trainer(net.collect_params(), "adam")
    trainer.save_states(os.path.join(d, "t.states"))
    s = ksym.FullyConnected(ksym.Variable("data"), name="fc", num_hidden=2)
    m = mod.Module(s, label_names=None)
    m.bind(data_shapes=[("data", (1, 3))])
    m.init_params()
    m.save_checkpoint(os.path.join(d, "c"), 1)             # c-symbol.json, c-0001.params

    status = open("/proc/self/status").read()
    used = int(status.split("VmSize:")[1].split()[0]) * 1024
    cap = (4 << 30) if limit == "4GiB" else used + (192 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def p(name):
        return os.path.join(d, name)

    loads = {
        "nd.load (MXNet format)": lambda: mx.nd.load(p("a.nd")),
        "nd.load (npz)": lambda: mx.nd.load(p("a.npz")),
        "npx.load": lambda: npx.load(p("a.npz")),
        "sym.load": lambda: ksym.load(p("c-symbol.json")),
        "Module.load": lambda: mod.Module.load(p("c"), 1, label_names=None),
        "Module.load_params": lambda: m.load_params(p("c-0001.params")),
        "load_checkpoint": lambda: model.load_checkpoint(p("c"), 1),
        "SymbolBlock.imports": lambda: nn.SymbolBlock.imports(
            p("k-symbol.json"), ["data"], p("k-0000.params")),
        "SymbolBlock.imports (MXNet files)": lambda: nn.SymbolBlock.imports(
            p("c-symbol.json"), ["data"], p("c-0001.params")),
        "load_parameters (npz)": lambda: net.load_parameters(p("net.params")),
        "load_parameters (MXNet format)": lambda: net.load_parameters(p("mx.params")),
        "ParameterDict.load": lambda: net.collect_params().load(p("mx.params")),
        "Trainer.load_states": lambda: trainer.load_states(p("t.states")),
    }
    for name, load in loads.items():
        try:
            load()
            print("ok", name)
        except BaseException as exc:
            print("fail", name, type(exc).__name__, str(exc)[:200].replace("\\n", " "))
""")


@pytest.mark.parametrize("limit", ["4GiB", "tight"])
def test_every_load_path_works_under_an_address_space_limit(tmp_path, limit):
    env = dict(os.environ, KILN_BACKEND="numpy", PYTHONPATH=ROOT)
    res = subprocess.run([sys.executable, "-W", "ignore", "-c", SCRIPT, str(tmp_path), limit],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 13, res.stdout
    assert [line for line in lines if not line.startswith("ok ")] == []


# ---- files past a cap ----------------------------------------------------------------------

def _sparse(path, size, head=b""):
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


def test_a_params_file_past_its_cap_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.params"
    _sparse(path, (4 << 30) + 1, struct.pack("<QQQ", 0x112, 0, 1))   # MXNet magic, 4 GiB
    for load in (kiln.nd.load, nn.Dense(2, in_units=2).load_parameters):
        with pytest.raises(kiln.KilnError) as info:
            load(str(path))
        message = str(info.value)
        assert str(path) in message and str((4 << 30) + 1) in message
        assert str(4 << 30) in message                                   # the cap


def test_a_symbol_file_past_its_cap_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge-symbol.json"
    _sparse(path, (256 << 20) + 1, b"{")
    for load in (kiln.sym.load, lambda f: nn.SymbolBlock.imports(f, ["data"])):
        with pytest.raises(kiln.KilnError) as info:
            load(str(path))
        assert str(path) in str(info.value) and str(256 << 20) in str(info.value)


def test_read_capped_reads_only_what_the_file_holds(tmp_path, monkeypatch):
    """f.read(cap + 1) reserves cap + 1 bytes whatever the file holds (a 4 GiB request
    for a 100-byte file): reads are bounded by the file's size."""
    path = tmp_path / "small.bin"
    path.write_bytes(b"x" * 100)
    requested = []
    real_open = open

    class Spy(io.FileIO):
        def read(self, n=-1):
            requested.append(n)
            return super().read(n)

        def readinto(self, b):
            requested.append(len(b))
            return super().readinto(b)

    monkeypatch.setattr("builtins.open", lambda p, mode="r", *a, **k: Spy(p, "rb")
                        if p == str(path) else real_open(p, mode, *a, **k))
    assert bytes(npx_io.read_capped(str(path), "test file", 4 << 30)) == b"x" * 100
    assert max(requested) <= 1 << 20


# ---- hostile npz headers -------------------------------------------------------------------

def _npz(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, raw in members.items():
            zf.writestr(name + ".npy", raw)


def _header_only(shape, descr="<f4", data=b""):
    buf = io.BytesIO()
    onp.lib.format.write_array_header_1_0(
        buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


HOSTILE = {
    # case: (shape, what the message must name)
    "2^40 elements": ((1 << 40,), str(1 << 40)),
    "a few GB": ((1 << 20, 1 << 10), str(1 << 30)),
    "negative dimension": ((-3, 4), "-3"),
    "negative dimensions whose product is positive": ((-(1 << 40), -4), "negative"),
    "overflowing dimensions": ((1 << 62, 1 << 62, 1 << 62), str(1 << 62)),
    "data cut short": ((1 << 27,), "holds"),
}

LOADERS = {      # each is given the prefix of PREFIX-symbol.json and PREFIX-0001.params
    "npx.load": lambda prefix: kiln.npx.load(prefix + "-0001.params"),
    "nd.load": lambda prefix: kiln.nd.load(prefix + "-0001.params"),
    "load_parameters": lambda prefix: nn.Dense(2, in_units=2).load_parameters(
        prefix + "-0001.params"),
    "ParameterDict.load": lambda prefix: nn.Dense(2, in_units=2).collect_params().load(
        prefix + "-0001.params"),
    "load_checkpoint": lambda prefix: kiln.model.load_checkpoint(prefix, 1),
    "Module.load": lambda prefix: kiln.mod.Module.load(prefix, 1).load_params(
        prefix + "-0001.params"),
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_npz_headers_are_refused_before_allocating(tmp_path, case, loader):
    shape, named = HOSTILE[case]
    prefix = str(tmp_path / "c")
    kiln.sym.FullyConnected(kiln.sym.Variable("data"), num_hidden=2, name="fc").save(
        prefix + "-symbol.json")
    path = prefix + "-0001.params"
    _npz(path, {"weight": _header_only(shape, data=b"\0" * 16)})
    with pytest.raises(kiln.KilnError) as info:
        LOADERS[loader](prefix)
    message = str(info.value)
    assert path in message and "weight" in message and named in message, message


def test_hostile_params_of_a_symbol_block_are_refused(tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(2))
    net.initialize()
    net.hybridize()
    net(np.ones((1, 3)))
    sym_file, _ = net.export(str(tmp_path / "m"))
    path = str(tmp_path / "hostile.params")
    _npz(path, {"0.weight": _header_only((1 << 40, 3))})
    with pytest.raises(kiln.KilnError, match=str(1 << 40)) as info:
        nn.SymbolBlock.imports(sym_file, ["data"], path)
    assert path in str(info.value)


def test_the_cap_is_named_and_the_arrays_of_a_file_count_together(tmp_path, monkeypatch):
    path = str(tmp_path / "two.npz")
    kiln.npx.save(path, {"a": np.ones((10,)), "b": np.ones((10,))})
    assert len(kiln.npx.load(path)) == 2
    monkeypatch.setattr(npx_io, "MAX_PARAMS_FILE_BYTES", 60)     # each array fits, both do not
    with pytest.raises(kiln.KilnError, match="60") as info:
        kiln.npx.load(path)
    assert path in str(info.value)
    monkeypatch.setattr(npx_io, "MAX_TENSOR_ELEMENTS", 5)
    with pytest.raises(kiln.KilnError, match=r"\(10,\).*5 elements"):
        kiln.npx.load(path)


def test_truncated_npz_is_a_kiln_error(tmp_path):
    path = tmp_path / "t.npz"
    kiln.npx.save(str(path), [np.ones((1000,))])
    raw = path.read_bytes()
    for cut in (10, len(raw) // 2, len(raw) - 30):
        path.write_bytes(raw[:cut])
        with pytest.raises(kiln.KilnError, match=str(path)):
            kiln.npx.load(str(path))
