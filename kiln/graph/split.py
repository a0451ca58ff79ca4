"""Splitting a traced forward+backward graph into a forward and a backward program.

The joint graph's nodes that do not depend on any incoming output gradient belong to the
forward program. Forward values that backward nodes read are "residuals": the forward
program returns them, and the backward program takes them as inputs. Only a mask (an
elementwise boolean residual) computed from other residuals, such as a ReLU's from its
output, is computed again by the backward instead: a comparison fused into its reader's
loop there rather than a value kept alive between the two programs.
"""
from .._core.ir import Graph, Node
from ..ops.registry import REGISTRY


def substitute(outputs, mapping):
    """Rebuild `outputs` with the nodes in `mapping` (id -> Node) replaced."""
    memo = dict(mapping)

    def build(node):
        hit = memo.get(id(node))
        if hit is not None:
            return hit
        stack = [(node, False)]
        while stack:
            n, ready = stack.pop()
            if id(n) in memo:
                continue
            if not ready:
                stack.append((n, True))
                stack.extend((i, False) for i in n.inputs if id(i) not in memo)
                continue
            new_inputs = tuple(memo[id(i)] for i in n.inputs)
            if all(a is b for a, b in zip(new_inputs, n.inputs)):
                memo[id(n)] = n
            else:
                memo[id(n)] = Node(n.op, new_inputs, n.attrs, n.shape, n.dtype, name=n.name,
                                   value=n.value)
        return memo[id(node)]

    return [build(o) for o in outputs]


def split_forward_backward(joint, n_inputs, n_forward_outputs):
    """joint.inputs = user inputs + incoming gradients; joint.outputs = forward outputs
    (incl. state updates) + gradients. Returns (forward, backward, n_residuals); the backward
    graph's inputs are residuals + incoming gradients + user inputs."""
    user_inputs = joint.inputs[:n_inputs]
    grad_inputs = joint.inputs[n_inputs:]
    needs_grad = {id(n) for n in grad_inputs}
    for n in joint.nodes:
        if any(id(i) in needs_grad for i in n.inputs):
            needs_grad.add(id(n))
    fwd_outputs = joint.outputs[:n_forward_outputs]
    grad_outputs = joint.outputs[n_forward_outputs:]
    residuals, seen = [], set()

    def keep(n):
        if id(n) in needs_grad or n.op in ("const", "input", "param") or id(n) in seen:
            return
        seen.add(id(n))
        residuals.append(n)

    for n in joint.nodes:
        if id(n) in needs_grad:
            for i in n.inputs:
                keep(i)
    for o in grad_outputs:
        keep(o)
    residuals = _without_recomputable(residuals)
    forward = Graph(user_inputs, joint.params, fwd_outputs + residuals, joint.name + "_forward")
    res_inputs = [Node("input", (), {}, r.shape, r.dtype, name=f"residual{k}")
                  for k, r in enumerate(residuals)]
    mapping = {id(r): ri for r, ri in zip(residuals, res_inputs)}
    backward = Graph(res_inputs + grad_inputs + user_inputs, joint.params,
                     substitute(grad_outputs, mapping), joint.name + "_backward")
    return forward, backward, len(residuals)


def _without_recomputable(residuals):
    """The residuals less the masks whose inputs are all kept residuals or sources:
    backward recomputes those (substitute rebuilds them on its inputs)."""
    kept = {id(r) for r in residuals}
    out = []
    for r in residuals:
        prim = REGISTRY.get(r.op)
        if (r.dtype == bool and prim is not None and prim.elementwise and not prim.random
                and r.inputs
                and all(i.op in ("const", "input", "param") or
                        (id(i) in kept and i is not r) for i in r.inputs)):
            kept.discard(id(r))
            continue
        out.append(r)
    return out
