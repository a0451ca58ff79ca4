"""CLI subcommands for exported models: inspect, run, draw, build-c, onnx.

Each takes the argv after its name and returns an exit code. A KilnError (a bad file, a
missing tool) is printed as one line on stderr with exit code 1, never a traceback.
"""
import argparse
import functools
import os
import shutil
import subprocess
import sys

import numpy as _np

from .._core.base import KilnError


def _friendly(fn):
    @functools.wraps(fn)
    def run(argv):
        try:
            return fn(argv)
        except KilnError as exc:
            print(f"kiln: error: {exc}", file=sys.stderr)
            return 1
    return run


def _default_params(symbol_file):
    if symbol_file.endswith("-symbol.json"):
        path = symbol_file[:-len("-symbol.json")] + "-0000.params"
        if os.path.exists(path):
            return path
    return None


def _human(nbytes):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024


@_friendly
def inspect_main(argv):
    p = argparse.ArgumentParser(prog="python -m kiln inspect",
                                description="describe an exported model")
    p.add_argument("symbol_file")
    p.add_argument("params_file", nargs="?", help="default: PATH-0000.params beside it")
    a = p.parse_args(argv)
    from ..export.symbol import read_symbol
    sym = read_symbol(a.symbol_file)
    print(f"model {sym.name} (format version {sym.format_version}, "
          f"written by kiln {sym.kiln_version})")
    print("inputs:")
    for k in sym.inputs:
        n = sym.nodes[k]
        print(f"  {n.name}: {n.dtype}{list(n.shape)}")
    env = sym.shape_env
    if env is not None:
        print("symbolic sizes (example values): "
              + ", ".join(f"{name} ({hint})" for name, hint in env.symbols.items()))
        print(f"guards (the sizes served are those where all hold): {len(env.guards)}")
        for guard in env.guards:
            print(f"  {guard!r}")
    print("outputs:")
    for j, k in enumerate(sym.outputs):
        n = sym.nodes[k]
        print(f"  output{j} (node {k}, {n.op}): {n.dtype}{list(n.shape)}")
    counts = sym.op_counts()
    print(f"ops ({sum(counts.values())} nodes):")
    for op, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {op:<16} {c}")
    params = sym.params
    total = sum(s.size for _, s in params)
    nbytes = sum(s.size * s.dtype.itemsize for _, s in params)
    print(f"parameters: {len(params)} arrays, {total} values, {_human(nbytes)}")
    for _, s in params:
        print(f"  {s.name}: {s.dtype}{list(s.shape)}")
    if sym.consts:
        print(f"constants: {len(sym.consts)}")
    params_file = a.params_file or _default_params(a.symbol_file)
    if params_file:
        from ..export.params import match_params
        from ..npx.io import read_npz
        match_params(sym, read_npz(params_file, "params file"), params_file)
        print(f"params file {params_file}: matches ({_human(os.path.getsize(params_file))})")
    else:
        print("params file: not found")
    return 0


@_friendly
def run_main(argv):
    p = argparse.ArgumentParser(prog="python -m kiln run",
                                description="run an exported model on .npy inputs")
    p.add_argument("symbol_file")
    p.add_argument("params_file")
    p.add_argument("--input", action="append", default=[], metavar="X.npy",
                   help="one per model input, in order")
    p.add_argument("--output", metavar="OUT.npy",
                   help="save the output here (several outputs: OUT.npz)")
    a = p.parse_args(argv)
    from ..gluon.symbol_block import SymbolBlock
    from ..export.symbol import read_symbol
    from ..npx.io import write_npz_atomic
    sym = read_symbol(a.symbol_file)
    block = SymbolBlock(sym)
    block.load_parameters(a.params_file)
    if len(a.input) != len(sym.inputs):
        raise KilnError(f"the model takes {len(sym.inputs)} inputs ({sym.input_names}); "
                        f"got {len(a.input)} --input files")
    from .._core.ndarray import ndarray
    from ..npx.io import read_npy
    args = [ndarray._wrap(read_npy(path, "input")) for path in a.input]
    outs = block(*args)
    outs = outs if isinstance(outs, list) else [outs]
    values = [o.asnumpy() for o in outs]
    if a.output:
        if len(values) == 1:
            _np.save(a.output, values[0])
        else:
            write_npz_atomic(a.output, {f"output{k}": v for k, v in enumerate(values)})
        print(f"wrote {a.output}")
    else:
        for k, v in enumerate(values):
            print(f"output{k}: {v.dtype}{list(v.shape)}")
            print(_np.array2string(v, threshold=200))
    return 0


@_friendly
def draw_main(argv):
    p = argparse.ArgumentParser(prog="python -m kiln draw",
                                description="draw an exported graph (graphviz)")
    p.add_argument("symbol_file")
    p.add_argument("-o", "--output", required=True,
                   help="graph.dot (no graphviz needed), or .svg/.png/.pdf (needs `dot`)")
    a = p.parse_args(argv)
    from ..export.symbol import read_symbol
    from ..export.loaded import LoadedModel, to_graph
    sym = read_symbol(a.symbol_file)
    consts = {k: _np.zeros(s.shape, s.dtype) for k, s in sym.consts}   # values not drawn
    dot = to_graph(LoadedModel(sym, {}, consts)).to_dot()
    fmt = os.path.splitext(a.output)[1].lstrip(".").lower()
    if fmt in ("dot", "gv"):
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(dot + "\n")
        return 0
    exe = shutil.which("dot")
    if exe is None:
        raise KilnError("drawing needs graphviz's `dot` program (apt install graphviz); "
                        "or write graphviz source with -o graph.dot")
    res = subprocess.run([exe, f"-T{fmt}", "-o", a.output], input=dot.encode(),
                         capture_output=True)
    if res.returncode != 0:
        raise KilnError(f"dot failed: {res.stderr.decode(errors='replace').strip()}")
    return 0


@_friendly
def build_c_main(argv):
    p = argparse.ArgumentParser(prog="python -m kiln build-c",
                                description="write a standalone C program for a model")
    p.add_argument("symbol_file")
    p.add_argument("params_file")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--size", action="append", default=[], metavar="NAME=N",
                   help="fix a symbolic size of the model in the program (one per symbol; "
                   "without: the program takes them at run time)")
    a = p.parse_args(argv)
    from ..export.standalone_c import build_c
    sizes = {}
    for item in a.size:
        name, _, value = item.partition("=")
        if not value.strip().isdigit():
            raise KilnError(f"--size takes NAME=N (N an integer >= 0), got {item!r}")
        sizes[name.strip()] = int(value)
    build_c(a.symbol_file, a.params_file, a.output, sizes or None)
    from ..export.symbol import read_symbol
    env = read_symbol(a.symbol_file).shape_env
    with open(os.path.join(a.output, "model.h"), encoding="utf-8") as f:
        fixed = "#define KILN_MODEL_NUM_SIZES 0\n" in f.read()
    if env is not None and fixed:
        chosen = sizes or env.symbols
        print("the model's symbolic sizes are fixed in this program: "
              + ", ".join(f"{k}={v}" for k, v in sorted(chosen.items()))
              + ("" if sizes else " (as exported: its C needs their values; choose with "
                 "--size NAME=N)"))
    elif env is not None:
        print("the program takes the model's symbolic sizes at run time: "
              + " ".join(f"{k}=N" for k in sorted(env.symbols)) + " (not given: as "
              "exported, " + ", ".join(f"{k}={v}" for k, v in sorted(env.symbols.items()))
              + "); --size NAME=N fixes them when building")
    print(f"wrote {a.output}/ (model.c, model.h, weights.c, main.c, Makefile); "
          f"build with: make -C {a.output}")
    return 0


@_friendly
def onnx_main(argv):
    p = argparse.ArgumentParser(prog="python -m kiln onnx",
                                description="convert an exported model to ONNX")
    p.add_argument("symbol_file")
    p.add_argument("params_file")
    p.add_argument("-o", "--output", required=True, metavar="MODEL.onnx")
    p.add_argument("--opset", type=int, default=17)
    a = p.parse_args(argv)
    from ..export.onnx import export
    export((a.symbol_file, a.params_file), None, a.output, a.opset)
    print(f"wrote {a.output}")
    return 0
