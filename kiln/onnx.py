"""kiln.onnx: export a model to ONNX (needs the optional 'onnx' package).

    kiln.onnx.export(net, [x], "model.onnx")                  # a hybridizable block
    kiln.onnx.export("model-symbol.json", [x], "model.onnx")  # an exported symbol file
"""


def export(block_or_symbol_file, example_inputs, path, opset=17):
    """Write an ONNX model equivalent to the block's predict-mode forward; returns path."""
    from .export.onnx import export as _export
    return _export(block_or_symbol_file, example_inputs, path, opset)
