"""One loop for several elementwise steps of a loop body (a scan's step, a while body).

The backward of an LSTM step is a dozen elementwise steps over one (batch, hidden) shape:
the gate activations recomputed from the saved pre-activations, the cell's gradient, the
four gates' gradients. As steps of their own they are a dozen passes over memory, several
of them jobs of the thread pool, at every time step. Merged, they are one loop that
computes each node once per element and stores only the values read elsewhere; the
forward's new cell state and hidden state likewise become one loop.

merge() walks the schedule and groups the 'fused' steps of one fixed shape: a step joins
the open group when it reads the group's results (if at all) element by element, not
through a slice (a loop iteration has only its own element of them). Once another step
reads the group's results, the merged loop must run before it, so a later step joins only
if all else it reads is computed before that reader (the cell's gradient times the forget
gate, after the recurrent matmul in the schedule, joins the loop before it). The merged
step sits before the first reader (else where its last member was), its nodes the
members' in order, its sink the last member's; `also` lists the other members' results
read outside the group or returned, which the loop stores on the way (codegen's
collapse() and memory plan give each a buffer of its own).

into_concat() lets such a loop store the values a concatenation joins straight into their
places in its result (the four gate gradients of an LSTM step, which the recurrent matmul
reads as one matrix): the concatenation then copies nothing (its step becomes 'written')
and its result gets a buffer of its own, which the loop writes before the concatenation's
place in the schedule.
"""
from .sizes import is_runtime
from .steps import Step, external_inputs


def merge(steps, graph):
    """steps with the mergeable runs of fused steps replaced by one step each."""
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    made_by = {id(n): k for k, s in enumerate(steps) for n in s.nodes}
    before = {}             # position -> the merged step that runs before the step there
    dropped = set()         # positions of merged members
    group, first_reader = [], None

    def close():
        nonlocal first_reader
        members = [steps[k] for k in group]
        if len(members) > 1:
            nodes = [n for s in members for n in s.nodes]
            inside = {id(n) for n in nodes}
            also = [s.sink for s in members[:-1]
                    if id(s.sink) in outputs or any(id(u) not in inside
                                                    for u in users[id(s.sink)])]
            at = group[-1] if first_reader is None else first_reader
            before[at] = Step("fused", nodes, external_inputs(nodes), also=also)
            dropped.update(group)
        group.clear()
        first_reader = None

    for k, s in enumerate(steps):
        sinks = {id(steps[j].sink) for j in group}
        # a step joins when it reads the group's results element by element, and what else
        # it reads is computed before the merged loop runs (before the group's first reader)
        if _mergeable(s) and group and s.sink.shape == steps[group[0]].sink.shape \
                and not _sliced(s, sinks) and (first_reader is None or all(
                    id(i) in sinks or made_by.get(id(i), -1) < first_reader
                    for i in s.inputs)):
            group.append(k)
            continue
        if any(id(i) in sinks for i in s.inputs) and first_reader is None:
            first_reader = k
        if _mergeable(s):
            if group and (first_reader is not None or s.sink.shape !=
                          steps[group[0]].sink.shape):
                close()
            if not group:
                group.append(k)
    close()
    merged = []
    for k, s in enumerate(steps):
        if k in before:
            merged.append(before[k])
        if k not in dropped:
            merged.append(s)
    return merged


def _mergeable(step):
    return step.kind == "fused" and not step.also and not any(
        is_runtime(d) for d in step.sink.shape) and step.sink.size > 0


def _sliced(step, sinks):
    """Does the step read one of `sinks` through a slice?"""
    return any(n.op == "slice" and id(n.inputs[0]) in sinks for n in step.nodes)


def into_concat(steps, graph):
    """Point the stores of a fused step at the concatenation that alone reads them; returns
    the concatenations' nodes made 'written' (each needs a buffer of its own)."""
    users = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    stored_by = {id(v): s for s in steps if s.kind == "fused" for v in s.also + [s.sink]}
    written = []
    for c in steps:
        node = c.sink
        if node.op != "concatenate" or any(is_runtime(d) for d in node.shape):
            continue
        fused = {id(stored_by.get(id(x))) for x in node.inputs}
        step = stored_by.get(id(node.inputs[0]))
        if step is None or len(fused) != 1 or len({id(x) for x in node.inputs}) != \
                len(node.inputs) or any(
                    x.dtype != node.dtype or id(x) in outputs or len(users[id(x)]) != 1
                    for x in node.inputs):
            continue
        axis = node.attrs["axis"] % node.ndim
        inner = 1
        for d in node.shape[axis + 1:]:
            inner *= d
        start = 0
        for x in node.inputs:
            step.into[id(x)] = (node, start * inner)
            start += x.shape[axis]
        c.kind = "written"
        written.append(node)
    return written
