"""MXNet's `mx.monitor.Monitor`: statistics of an executor's arrays every `interval` batches.

    mon = mx.mon.Monitor(10, pattern='.*weight|.*output')
    mon.install(exe)              # an executor from Symbol.bind / simple_bind
    mon.tic(); exe.forward(...); exe.backward(); mon.toc_print()

MXNet collects each operator's output as the engine runs it. kiln's executor runs a
compiled program whose intermediate values are not kept, so toc() recomputes the symbol's
internal outputs from the executor's current arguments and auxiliary states (in predict
mode), then adds the arguments and auxiliary states themselves, as MXNet does. The default
statistic is MXNet's: norm(x) / sqrt(x.size).
"""
import logging
import math
import re

import numpy as _np

from .._core.base import KilnError


def _asum_stat(x):
    return _np.array([_np.linalg.norm(x.asnumpy().ravel()) / math.sqrt(max(x.size, 1))],
                     dtype=_np.float32)


class Monitor:
    """Statistics (by default `norm(x) / sqrt(x.size)`) of an executor's arrays whose names match
    `pattern`, every `interval` batches: `install`, `tic`, `toc`, `toc_print`."""
    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        self.interval, self.stat_func = interval, stat_func or _asum_stat
        self.re_prog, self.sort, self.monitor_all = re.compile(pattern), sort, monitor_all
        self.activated, self.queue, self.step, self.exes = False, [], 0, []

    def install(self, exe):
        if not (hasattr(exe, "_symbol") and hasattr(exe, "arg_dict")):
            raise KilnError(f"Monitor.install: expected an executor (Symbol.bind), got "
                            f"{type(exe).__name__}")
        self.exes.append(exe)

    def tic(self):
        """Start collecting if this batch is one of every `interval`."""
        if self.step % self.interval == 0:
            self.queue, self.activated = [], True
        self.step += 1

    def _outputs(self, exe):
        internals = exe._symbol.get_internals()
        values = {**exe.arg_dict, **exe.aux_dict}
        variables = set(values)
        for name, array in zip(internals.list_outputs(), internals.eval(**values)):
            if name not in variables and self.re_prog.match(name):
                self.queue.append((self.step, name, self.stat_func(array)))

    def _backward_outputs(self, exe):
        if getattr(exe, "last_out_grads", None) is None:
            return
        for name, array in backward_outputs(exe):
            if self.re_prog.match(name):
                self.queue.append((self.step, name, self.stat_func(array)))

    def toc(self):
        """[(step, name, statistic text)] of this batch's arrays, or [] when inactive."""
        if not self.activated:
            return []
        for exe in self.exes:
            self._outputs(exe)
            self._backward_outputs(exe)
            for name, array in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda item: item[1])
        result = []
        for step, name, stats in self.queue:
            text = ""
            for v in stats if isinstance(stats, list) else [stats]:
                v = v.asnumpy() if hasattr(v, "asnumpy") else _np.asarray(v)
                text += (str(v.reshape(-1)[0]) if v.shape == (1,) else str(v)) + "\t"
            result.append((step, name, text))
        self.queue = []
        return result

    def toc_print(self):
        for step, name, text in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(step, name, text))


def backward_outputs(exe):
    """[(name, gradient)] of every op node's inputs in the executor's last backward, named as
    MXNet's monitor names them (`<node>_backward_output`, numbered when the node has several
    inputs). Each node is differentiated on its own, from the gradients its consumers send."""
    from .._core import autograd
    from .._core.ndarray import full_like
    from .sym.evaluation import _call_node
    from .sym.symbol import nodes_of
    feed = {**exe.arg_dict, **exe.aux_dict}
    values, records = {}, []
    for node in nodes_of(exe._symbol._heads):
        if node.is_var:
            values[id(node)] = [feed[node.name]]
            continue
        leaves = []
        for src, k in node.inputs:
            leaf = values[id(src)][k].detach()
            if _np.issubdtype(leaf.dtype, _np.inexact):
                leaf.attach_grad()
            leaves.append(leaf)
        with autograd.record():
            out = _call_node(node, leaves)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        values[id(node)] = [o.detach() for o in outs]
        records.append((node, leaves, outs))
    grads = {(id(node), k): g for (node, k), g in zip(exe._symbol._heads, exe.last_out_grads)}
    result = []
    for node, leaves, outs in reversed(records):
        heads = [grads.get((id(node), k)) for k in range(len(outs))]
        heads = [full_like(o, 0) if g is None else g for o, g in zip(outs, heads)]
        wanted = [leaf for leaf in leaves if leaf._tape is not None]
        found = iter(autograd.grad(outs, wanted, head_grads=heads) if wanted else [])
        for k, ((src, j), leaf) in enumerate(zip(node.inputs, leaves)):
            g = next(found) if leaf._tape is not None else full_like(leaf, 0)
            suffix = str(k) if len(node.inputs) > 1 else ""
            result.append((f"{node.name}_backward_output{suffix}", g))
            key = (id(src), j)
            grads[key] = g if key not in grads else grads[key] + g
    return result
