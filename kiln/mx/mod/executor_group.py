"""MXNet 1.x's DataParallelExecutorGroup: one Executor per context, each bound to its slice
of the batch.

The batch axis of each input is the 'N' of its DataDesc layout (0 when there is none); the
batch is split over the contexts by `workload` as MXNet splits it. Parameters live once per
executor (a Module averages them when it reads them back); inputs and the other arguments
that are not parameters are kept in `shared_data_arrays`, one dict per context, which a
group bound with `shared_group=` reuses, as it reuses the shared group's parameter and
gradient arrays (a BucketingModule's buckets train one set of weights this way).
kiln runs every context on the CPU, so the executors differ only by their slice.
"""
import logging
from collections import OrderedDict

import numpy as _np

from ..._core.base import KilnError, where_in_user_code
from ..._core.context import placed
from ..._core.ndarray import ndarray
from ...io import DataDesc
from ..sym.evaluation import infer_shape_strict, infer_type, _as_array
from ..ops import parse_attr
from ..sym.executor import Executor
from ..sym.symbol import nodes_of


def split_slices(batch_size, workload):
    """MXNet's _split_input_slice: contiguous slices of the batch, sized by workload."""
    total = float(sum(workload))
    bounds, start = [], 0
    for k, load in enumerate(workload):
        end = batch_size if k == len(workload) - 1 else int(round(start + batch_size * load
                                                                  / total))
        end = min(max(end, start), batch_size)
        if end == start:
            raise ValueError(f"Too many slices: the batch of {batch_size} cannot be split "
                             f"over {len(workload)} contexts")
        bounds.append(slice(start, end))
        start = end
    return bounds


def _take(array, axis, piece):
    """array[piece] along `axis` (the whole array when axis < 0)."""
    if axis < 0:
        return array
    return array[(slice(None),) * axis + (piece,)]


def merge(arrays, axis):
    """One array from the per-context pieces (concatenated along the batch axis)."""
    if len(arrays) == 1 or axis < 0:
        return arrays[0]
    return ndarray._wrap(_np.concatenate([a.asnumpy() for a in arrays], axis=axis))


def _layout_axis(symbol_node):
    layout = symbol_node.var_attrs.get("__layout__", symbol_node.attrs.get("__layout__"))
    return DataDesc.get_batch_axis(layout) if layout else 0


class DataParallelExecutorGroup:
    """The executors of a Module, one per context (see the module docstring)."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req="write", state_names=None,
                 group2ctxs=None):
        self.symbol, self.contexts = symbol, list(contexts)
        self.workload = list(workload) if workload else [1] * len(self.contexts)
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self.group2ctxs = _group_contexts(group2ctxs, len(self.contexts))
        self.execs = []
        self.shared_data_arrays = (shared_group.shared_data_arrays if shared_group is not None
                                   else [{} for _ in self.contexts])
        data_shapes, label_shapes = _descs(data_shapes), _descs(label_shapes)
        self.grad_req = self._grad_reqs(grad_req, [d.name for d in data_shapes])
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_names):
        if not self.for_training:
            return {n: "null" for n in self.arg_names}
        if isinstance(grad_req, str):
            reqs = {}
            for n in self.arg_names:
                if n in self.param_names:
                    reqs[n] = "null" if n in self.fixed_param_names else grad_req
                elif n in data_names:
                    reqs[n] = grad_req if self.inputs_need_grad else "null"
                else:
                    reqs[n] = "null"
            return reqs
        if isinstance(grad_req, (list, tuple)):
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            reqs = {n: "null" for n in self.arg_names}
            reqs.update(grad_req)
            return reqs
        raise ValueError(f"grad_req must be a str, list, tuple or dict, got "
                         f"{type(grad_req).__name__}")

    # ---- binding -----------------------------------------------------------------------------
    def decide_slices(self, data_shapes):
        axes = [DataDesc.get_batch_axis(d.layout) for d in data_shapes]
        sizes = {d.shape[a] for d, a in zip(data_shapes, axes) if a >= 0}
        if len(sizes) > 1:
            raise KilnError(f"DataParallelExecutorGroup: the inputs disagree on the batch size "
                            f"({sorted(sizes)})" + where_in_user_code())
        self.batch_size = sizes.pop() if sizes else data_shapes[0].shape[0]
        self.slices = split_slices(self.batch_size, self.workload)
        return axes

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        self.data_shapes, self.label_shapes = _descs(data_shapes), _descs(label_shapes)
        self.data_names = [d.name for d in self.data_shapes]
        self.label_names = [d.name for d in self.label_shapes]
        self.data_layouts = self.decide_slices(self.data_shapes)
        self.label_layouts = [DataDesc.get_batch_axis(d.layout) for d in self.label_shapes]
        self.output_layouts = [_layout_axis(node) for node, _ in self.symbol._heads]
        old = self.execs if reshape else [None] * len(self.contexts)
        self.execs = [self._bind_ith_exec(i, shared_group, old[i])
                      for i in range(len(self.contexts))]
        self._collect_arrays()

    def reshape(self, data_shapes, label_shapes):
        if data_shapes == self.data_shapes and list(label_shapes or []) == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _sliced_descs(self, i):
        descs = []
        for d, axis in zip(self.data_shapes + self.label_shapes,
                           self.data_layouts + self.label_layouts):
            shape = list(d.shape)
            if axis >= 0:
                piece = self.slices[i]
                shape[axis] = piece.stop - piece.start
            descs.append((d.name, tuple(shape), d.dtype))
        return descs

    def _bind_ith_exec(self, i, shared_group, previous):
        descs = self._sliced_descs(i)
        shapes = {n: s for n, s, _ in descs}
        piece = self.slices[i]
        shapes.update(self._state_shapes(piece.stop - piece.start, shapes))
        arg_shapes, _, aux_shapes = infer_shape_strict(self.symbol, **shapes)
        arg_types, _, aux_types = infer_type(self.symbol, **{n: t for n, _, t in descs})
        shared_exec = shared_group.execs[i] if shared_group is not None else previous
        shared_data = self.shared_data_arrays[i]
        args, grads = OrderedDict(), {}
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types):
            need_grad = self.grad_req[name] != "null"
            if name in self.param_names:
                args[name] = _reuse(shared_exec and shared_exec.arg_dict.get(name), shape, dtype)
                if need_grad:
                    grads[name] = _reuse(shared_exec and shared_exec.grad_dict.get(name),
                                         shape, dtype)
            else:
                args[name] = _reuse(shared_data.get(name), shape, dtype)
                shared_data[name] = args[name]
                if need_grad:
                    grads[name] = _reuse(previous and previous.grad_dict.get(name), shape, dtype)
        aux = {name: _reuse(shared_exec and shared_exec.aux_dict.get(name), shape, dtype)
               for name, shape, dtype in zip(self.aux_names, aux_shapes, aux_types)}
        self._place_groups(self.group2ctxs[i], (args, grads, aux))
        executor = Executor(self.symbol, args, grads, dict(self.grad_req), aux)
        if previous is not None:    # MXNet's Executor.reshape keeps the monitor callback
            executor._monitor = previous._monitor
        return executor

    def _place_groups(self, group_ctx, tables):
        """Arrays of variables made under AttrScope(ctx_group=g) report group2ctxs[g] (kiln
        keeps them in host memory like every context)."""
        if not group_ctx:
            return
        groups = {n.name: n.var_attrs.get("ctx_group") for n in nodes_of(self.symbol._heads)
                  if n.is_var}
        for table in tables:
            for name, array in table.items():
                if groups.get(name) in group_ctx and array is not None:
                    placed(array, group_ctx[groups[name]])

    def _state_shapes(self, batch, given):
        """{state: shape} for the states whose declared shape leaves its batch unknown (0
        at the 'N' of its __layout__, as MXNet's symbolic cells declare begin states):
        MXNet infers that batch backwards from the ops reading the state, which always
        meet the data's batch; kiln's inference runs forward, so the layout says it."""
        found = {}
        variables = {n.name: n for n in nodes_of(self.symbol._heads) if n.is_var}
        for name in self.state_names:
            node = variables.get(name)
            if node is None or name in given:
                continue
            shape, layout = node.var_attrs.get("__shape__"), node.var_attrs.get("__layout__")
            if isinstance(shape, str):
                shape = parse_attr(shape)
            axis = DataDesc.get_batch_axis(layout) if layout else -1
            if shape is None or not 0 <= axis < len(shape):
                continue
            shape = [int(d) for d in shape]
            if shape[axis] == 0 and all(d > 0 for k, d in enumerate(shape) if k != axis):
                shape[axis] = batch
                found[name] = tuple(shape)
        return found

    def _collect_arrays(self):
        execs = self.execs
        self.data_arrays = [[(self.slices[k], e.arg_dict[n]) for k, e in enumerate(execs)]
                            for n in self.data_names]
        self.label_arrays = [[(self.slices[k], e.arg_dict[n]) for k, e in enumerate(execs)]
                             for n in self.label_names]
        self.state_arrays = [[e.arg_dict[n] for e in execs] for n in self.state_names]
        self.param_arrays = [[e.arg_dict[n] for e in execs] for n in self.param_names]
        self.grad_arrays = [[e.grad_dict.get(n) for e in execs] for n in self.param_names]
        self.aux_arrays = [[e.aux_dict[n] for e in execs] for n in self.aux_names]
        self.input_grad_arrays = ([[e.grad_dict[n] for e in execs] for n in self.data_names]
                                  if self.inputs_need_grad else [])

    # ---- parameters --------------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_extra=False):
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Write the contexts' average of each parameter into arg_params/aux_params."""
        for names, arrays, out in ((self.param_names, self.param_arrays, arg_params),
                                   (self.aux_names, self.aux_arrays, aux_params)):
            for name, per_context in zip(names, arrays):
                mean = sum(a.asnumpy().astype(_np.float64) for a in per_context) / len(
                    per_context)
                out[name][...] = ndarray._wrap(mean.astype(per_context[0].dtype))

    # ---- running -----------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        if is_train is None:
            is_train = self.for_training
        _load(data_batch.data, self.data_arrays, self.data_layouts)
        label = getattr(data_batch, "label", None)
        if is_train and label and self.label_arrays:
            _load(label, self.label_arrays, self.label_layouts)
        elif label and self.label_arrays:
            _load(label[:len(self.label_arrays)], self.label_arrays, self.label_layouts)
        for e in self.execs:
            e.forward(is_train=is_train)

    def get_output_shapes(self):
        shapes = []
        for k, name in enumerate(self.symbol.list_outputs()):
            shape = list(self.execs[0].outputs[k].shape)
            axis = self.output_layouts[k]
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        end = len(self.symbol.list_outputs()) if end is None else end
        outputs = [[e.outputs[k] for e in self.execs] for k in range(begin, end)]
        if merge_multi_context:
            return [merge(parts, self.output_layouts[begin + k])
                    for k, parts in enumerate(outputs)]
        return outputs

    def get_states(self, merge_multi_context=True):
        if merge_multi_context:
            return [merge(parts, 0) for parts in self.state_arrays]
        return self.state_arrays

    def set_states(self, states=None, value=None):
        if states is not None:
            if value is not None:
                raise ValueError("set_states: give states or value, not both")
            for given, targets in zip(states, self.state_arrays):
                given = given if isinstance(given, (list, tuple)) else [given] * len(targets)
                for src, dst in zip(given, targets):
                    dst[...] = _as_array(src, "states")
        else:
            for targets in self.state_arrays:
                for dst in targets:
                    dst[...] = value

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise KilnError("get_input_grads: bind with inputs_need_grad=True first"
                            + where_in_user_code())
        if merge_multi_context:
            return [merge(parts, axis) for parts, axis in zip(self.input_grad_arrays,
                                                                self.data_layouts)]
        return self.input_grad_arrays

    def backward(self, out_grads=None):
        if not self.for_training:
            raise KilnError("backward: the module was bound with for_training=False"
                            + where_in_user_code())
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        for i, e in enumerate(self.execs):
            if out_grads is None:
                e.backward()
                continue
            pieces = [_take(_as_array(g, "out_grads"), axis, self.slices[i])
                      for g, axis in zip(out_grads, self.output_layouts)]
            e.backward([ndarray._wrap(_np.ascontiguousarray(p.asnumpy())) for p in pieces])

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        for i, e in enumerate(self.execs):
            if pre_sliced:
                piece = labels[i]
            else:
                piece = [_take(_as_array(lab, "labels"), axis, self.slices[i])
                         for lab, axis in zip(labels, self.label_layouts or [0] * len(labels))]
            eval_metric.update(piece, e.outputs)

    def install_monitor(self, mon):
        for e in self.execs:
            mon.install(e)


def _descs(shapes):
    """DataDescs of (name, shape) pairs or DataDescs."""
    return [d if isinstance(d, DataDesc) else DataDesc(*d) for d in shapes or []]


def _group_contexts(group2ctxs, n):
    """One {ctx_group: context} per executor, as MXNet's _prepare_group2ctxs makes it from a
    list of such dicts or one dict whose values are a context or a list of them."""
    if not group2ctxs:
        return [{} for _ in range(n)]
    if isinstance(group2ctxs, (list, tuple)):
        if len(group2ctxs) != n:
            raise ValueError(f"group2ctxs: expected {n} dicts (one per context), got "
                             f"{len(group2ctxs)}")
        return [dict(g or {}) for g in group2ctxs]
    per_executor = [{} for _ in range(n)]
    for group, ctxs in group2ctxs.items():
        ctxs = list(ctxs) if isinstance(ctxs, (list, tuple)) else [ctxs]
        if len(ctxs) == 1:
            ctxs = ctxs * n
        if len(ctxs) != n:
            raise ValueError(f"group2ctxs[{group!r}]: expected 1 or {n} contexts, got "
                             f"{len(ctxs)}")
        for table, ctx in zip(per_executor, ctxs):
            table[group] = ctx
    return per_executor


def _reuse(array, shape, dtype):
    """`array` when it has this shape and dtype (shared memory), else a new zero array."""
    if array is not None and tuple(array.shape) == tuple(shape) and array.dtype == dtype:
        return array
    return ndarray._wrap(_np.zeros(shape, dtype))


def _load(values, targets, axes):
    """Copy each input's slices into the executors' arrays."""
    for value, per_context, axis in zip(values, targets, axes):
        value = _as_array(value, "data")
        for piece, dst in per_context:
            dst[...] = _take(value, axis, piece) if len(per_context) > 1 else value
