"""Executor.debug_str: the bound graph as MXNet prints it, and the memory its arrays take.

The text lists the outputs, then every variable and op node with its inputs and attributes
(MXNet's layout). Its last line, "Total N MB allocated", is the peak of the arrays the
executor holds besides its bound arguments: run forward only, an op's output lives until
its last reader has run; when a gradient is asked for, every forward output is kept for the
backward pass, and the gradients live from the first reader's backward to the node's own.
"""
import numpy as _np


def _nbytes(shape, dtype):
    return int(_np.prod(shape, dtype=_np.int64)) * _np.dtype(dtype).itemsize


def _forward_peak(ops, heads, size):
    last_use = {}
    for k, node in enumerate(ops):
        for src, _ in node.inputs:
            last_use[id(src)] = k
    held = {id(n) for n, _ in heads}
    live = peak = 0
    for k, node in enumerate(ops):
        live += size[id(node)]
        peak = max(peak, live)
        for src in {id(s): s for s, _ in node.inputs}.values():
            if not src.is_var and last_use[id(src)] == k and id(src) not in held:
                live -= size[id(src)]
    return peak


def _backward_peak(ops, size, on_path):
    live = peak = 0
    allocated = set()
    for node in reversed(ops):
        if id(node) not in on_path:
            continue
        if id(node) not in allocated:      # a head's gradient
            allocated.add(id(node))
            live += size[id(node)]
        for src in {id(s): s for s, _ in node.inputs}.values():
            if not src.is_var and id(src) in on_path and id(src) not in allocated:
                allocated.add(id(src))
                live += size[id(src)]
        peak = max(peak, live)
        live -= size[id(node)]
    return peak


def debug_str(symbol, inference, nodes, on_path):
    """MXNet's text for a symbol bound with these shapes (`inference`); on_path: ids of
    the op nodes a computed gradient passes (none: forward only)."""
    ops = [n for n in nodes if not n.is_var]
    size = {id(n): sum(_nbytes(inference.shape(n, k), inference.dtype(n, k))
                       for k in range(n.num_outputs)) for n in ops}
    lines = ["Symbol Outputs:"]
    lines += [f"\toutput[{k}]={n.name}({i})" for k, (n, i) in enumerate(symbol._heads)]
    for node in nodes:
        if node.is_var:
            lines.append(f"Variable:{node.name}")
            continue
        lines += ["--------------------", f"Op:{node.op}, Name={node.name}", "Inputs:"]
        lines += [f"\targ[{k}]={src.name}({i})" + (" version=0" if src.is_var else "")
                  for k, (src, i) in enumerate(node.inputs)]
        if node.attrs:
            lines.append("Attrs:")
            lines += [f"\t{k}={v}" for k, v in node.attrs.items()]
    total = _forward_peak(ops, symbol._heads, size)
    if on_path:
        total = sum(size.values()) + _backward_peak(ops, size, on_path)
    lines.append(f"Total {total // (1 << 20)} MB allocated")
    return "\n".join(lines)
