"""Export and deployment: symbol JSON + npz params, SymbolBlock import, ONNX, standalone C.

Each concern has its own module: attrs (typed attribute encoding), symbol (the JSON
schema), params (the npz file), block_export (HybridBlock.export), loaded (reading a model
back), onnx (ONNX export), standalone_c (build-c), commands (the CLI subcommands).
"""
from .block_export import export_block  # noqa: F401
from .loaded import load_model  # noqa: F401
