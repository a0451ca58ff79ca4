"""Memory planning: liveness over the schedule, buffer reuse, and in-place updates.

Every computed node gets a slot in a buffer. A buffer is free again once the last reader of
every value it holds (including views of it) has run. An elementwise node may write over
its input when that input dies at this node and has the same shape and dtype. A chain of N
dense+relu layers therefore needs two intermediate buffers, whatever N is.

Donated inputs (a training step's backward program takes the activations its forward
returned, and nothing reads them after) are buffers the caller already holds: once read
for the last time, each can hold later values that fit in it, as MXNet's backward reuses
its forward's memory. It cannot grow, and never holds an output, which must outlive the
call.

Some values get a buffer of their own, exactly their size, that no earlier value used
and that does not take the place of an input: results whose memory the caller gives at
each call (a loop points a step's result at its row of the stacked result instead of
copying it there after the step), and values a backend writes before their place in the
schedule (a loop computing several nodes stores some on the way:
backend/c/loop_merge.py). Once such a value dies, later ones may reuse its buffer.
"""
from ..._core.symdim import SymInt, hinted, provably
from ...ops.registry import REGISTRY


class MemoryPlan:
    def __init__(self, buffer_of, capacities, naive_bytes, outputs_private, donated=None,
                 own=None):
        self.buffer_of = buffer_of          # id(node) -> buffer index
        self.capacities = capacities        # bytes per buffer
        self.naive_bytes = naive_bytes      # one fresh allocation per computed node
        self.outputs_private = outputs_private
        self.donated = donated or {}        # buffer index -> the donated input it is
        self.own = own or {}                # buffer index -> the value it was made for

    @property
    def num_buffers(self):
        return len(self.capacities)

    @property
    def bytes(self):
        return sum(self.capacities)

    def __repr__(self):
        return (f"MemoryPlan(num_buffers={self.num_buffers}, bytes={self.bytes}, "
                f"naive_bytes={self.naive_bytes})")


def _nbytes(node):
    return node.size * node.dtype.itemsize


def _registry_elementwise(node):
    return REGISTRY[node.op].elementwise


def plan_memory(graph, is_view=lambda node: False, writes_into=lambda node: True,
                inplace_ok=_registry_elementwise, donated=(), own=()):
    """Assign buffers to the computed nodes of `graph`.

    is_view(node):     the backend computes node as a view of its first input (no buffer)
    writes_into(node): the backend can write node's result into a given buffer
    inplace_ok(node):  node may overwrite an input of its shape and dtype that dies there
    donated:           inputs of graph whose storage may be overwritten after their last
                       read (each becomes a buffer of its size; MemoryPlan.donated)
    own:               computed nodes that get a buffer of their own (MemoryPlan.own)
    """
    schedule = [n for n in graph.nodes if not n.is_source]
    position = {id(n): k for k, n in enumerate(schedule)}
    root = {}
    for n in schedule:
        if is_view(n):
            src = n.inputs[0]
            root[id(n)] = root.get(id(src), id(src))
    forever = len(schedule)
    last_use = {}
    for n in schedule:
        for i in n.inputs:
            r = root.get(id(i), id(i))
            last_use[r] = max(last_use.get(r, -1), position[id(n)])
    for o in graph.outputs:
        last_use[root.get(id(o), id(o))] = forever

    buffer_of, capacities, free = {}, [], []
    owner_count = {}   # buffer -> number of live roots it holds
    fixed = {}         # buffer -> the donated input it is (its capacity cannot grow)
    for x in dict.fromkeys(donated):
        if last_use.get(id(x), forever) < forever and _nbytes(x) > 0:
            buffer_of[id(x)] = len(capacities)
            fixed[len(capacities)] = x
            owner_count[len(capacities)] = 1
            capacities.append(_nbytes(x))
    own_ids = {id(x) for x in own}
    own_buffers = {}
    naive = 0
    for k, n in enumerate(schedule):
        if is_view(n) or not writes_into(n):
            continue
        need = _nbytes(n)
        naive += need
        chosen, taken = None, None
        output = last_use.get(id(n)) == forever
        if id(n) in own_ids:
            capacities.append(0)
            chosen = len(capacities) - 1
            own_buffers[chosen] = n
        elif inplace_ok(n):
            for i in n.inputs:
                r = root.get(id(i), id(i))
                b = buffer_of.get(r)
                # (not when the step also reads a view of it: a window elsewhere in the
                # buffer, read after the loop has written there)
                if (b is not None and r == id(i) and last_use.get(r) == k and i.shape == n.shape
                        and i.dtype == n.dtype and owner_count[b] == 1
                        and not (output and b in fixed)
                        and not any(j is not i and root.get(id(j)) == r for j in n.inputs)):
                    chosen, taken = b, r     # in place: the input dies here
                    owner_count[b] -= 1
                    break
        if chosen is None:
            chosen = _take_free(free, capacities, need, fixed, output)
        capacities[chosen] = _grown(capacities[chosen], need)
        buffer_of[id(n)] = chosen
        owner_count[chosen] = owner_count.get(chosen, 0) + 1
        # release the buffers whose values die at this node
        # inputs in their order, once each: a set of ids would iterate in an order that
        # changes from run to run, and so would the buffers chosen and the generated C
        # (whose hash is the compile cache's key)
        for i in dict.fromkeys(root.get(id(x), id(x)) for x in n.inputs):
            b = buffer_of.get(i)
            if b is not None and last_use.get(i) == k and i != taken:
                owner_count[b] -= 1
                if owner_count[b] == 0:
                    free.append(b)
        if last_use.get(id(n), -1) < k:
            # computed but never read (dead code should be gone; keep the plan sound)
            owner_count[chosen] -= 1
            if owner_count[chosen] == 0:
                free.append(chosen)
    return MemoryPlan(buffer_of, capacities, naive, True, fixed, own_buffers)


def _grown(capacity, need):
    """max(capacity, need), where either may be a symbolic size: a buffer not used yet
    (capacity 0) takes `need` as it is, so a program with symbolic sizes keeps serving the
    calls where they are 0 (a comparison would have kept its traced answer as a guard)."""
    if capacity is need or isinstance(capacity, int) and capacity == 0:
        return need
    if provably(capacity, ">=", need):
        return capacity
    if provably(need, ">=", capacity):
        return need
    # sizes whose order changes with the sizes (a fixed size and a run-time one, seq and
    # seq * seq): their sum holds at every size, where max would hold only where its
    # traced answer does
    return capacity + need


def _size_class(nbytes):
    """The symbols a byte count depends on (an empty set for a fixed count)."""
    return frozenset(nbytes.symbols()) if isinstance(nbytes, SymInt) else frozenset()


def _take_free(free, capacities, need, fixed, output):
    """The free buffer to hold `need` bytes: the smallest that fits, else the largest that
    may grow, else a new one. A donated (fixed) buffer neither grows nor holds an output."""
    # a size known only at run time shares buffers with sizes of its own symbols only:
    # comparing it with a fixed size would keep the traced answer as a guard, and the
    # program would serve only the sizes on one side of it
    usable = [b for b in free if not (output and b in fixed)
              and _size_class(capacities[b]) == _size_class(need)]
    # (a buffer fits where it does at every size; among them, the traced sizes choose,
    # which needs no guard: any of them is right)
    fitting = [b for b in usable if provably(capacities[b], ">=", need)]
    growable = [b for b in usable if b not in fixed]
    if fitting:
        best = min(fitting, key=lambda b: hinted(capacities[b]))
    elif growable:
        best = max(growable, key=lambda b: hinted(capacities[b]))
    else:
        capacities.append(0)
        return len(capacities) - 1
    free.remove(best)
    return best
