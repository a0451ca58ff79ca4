"""`kiln.onnx` (MXNet's `mx.onnx`): export a model to ONNX (needs the optional 'onnx'
package). `export` is kiln's exporter (kiln/export/onnx.py); `export_model` is MXNet 1.9's
signature over it.

    kiln.onnx.export(net, [x], "model.onnx")                  # a hybridizable block
    kiln.onnx.export("model-symbol.json", [x], "model.onnx")  # an exported symbol file
"""
from ..export.onnx import export  # noqa: F401


def export_model(sym, params, in_shapes=None, in_types="float32", onnx_file_path="model.onnx",
                 verbose=False, dynamic=False, dynamic_input_shapes=None,
                 run_shape_inference=False, input_type=None, input_shape=None,
                 large_model=False, opset_version=17):
    """MXNet 1.9's `mx.onnx.export_model`: a symbol (a -symbol.json file or a Symbol) and
    its parameters (an nd.save file or a dict of arrays, 'arg:'/'aux:' prefixes allowed)
    to an ONNX file, for inputs of `in_shapes` and `in_types` (the symbol's arguments that
    are not parameters, in order). kiln writes static shapes: `dynamic` is refused."""
    import os
    import tempfile

    import numpy as _np

    from .._core.base import KilnError
    from ..gluon.symbol_block import SymbolBlock
    from .nd.functions import load, save
    from .._core.ndarray import ndarray
    from .sym.symbol import Symbol
    from .sym.serialization import load as load_symbol
    in_shapes = in_shapes if in_shapes is not None else input_shape
    in_types = input_type if input_type is not None else in_types
    if dynamic:
        raise KilnError("onnx.export_model: kiln exports static shapes; dynamic=True is not "
                        "supported (export once per input shape)")
    if not in_shapes:
        raise KilnError("onnx.export_model: give in_shapes, one shape per input")
    symbol = load_symbol(os.fspath(sym)) if not isinstance(sym, Symbol) else sym
    values = load(os.fspath(params)) if not isinstance(params, dict) else params
    values = {k[4:] if k.startswith(("arg:", "aux:")) else k: v for k, v in values.items()}
    inputs = [a for a in symbol.list_arguments() if a not in values]
    shapes = [tuple(s) for s in in_shapes]
    if len(shapes) != len(inputs):
        raise KilnError(f"onnx.export_model: the symbol's inputs are {inputs} (its arguments "
                        f"that are not parameters), got {len(shapes)} shape(s) {shapes}")
    types = list(in_types) if isinstance(in_types, (list, tuple)) else [in_types] * len(shapes)
    aux = set(symbol.list_auxiliary_states())
    with tempfile.TemporaryDirectory() as folder:
        sym_file = os.path.join(folder, "model-symbol.json")
        par_file = os.path.join(folder, "model-0000.params")
        symbol.save(sym_file)
        save(par_file, {("aux:" if k in aux else "arg:") + k:
                        v if isinstance(v, ndarray) else ndarray._wrap(_np.asarray(v))
                        for k, v in values.items()})
        block = SymbolBlock.imports(sym_file, inputs, par_file)
    examples = [_np.zeros(s, _np.dtype(t)) for s, t in zip(shapes, types)]
    if verbose:
        print(f"kiln.onnx.export_model: inputs {dict(zip(inputs, shapes))} -> {onnx_file_path}")
    return export(block, examples, onnx_file_path, opset_version or 17)
