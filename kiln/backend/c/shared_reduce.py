"""C for an allreduce_start / allreduce_wait pair through a shared window (one machine).

The protocol and the window's layout are in kiln/distributed/shared.py. A program using the
window first counts its call (the rank's call counter: its parity picks the data zone).
Start puts this rank's copy of the bucket in its region (unless the gradients were
computed there) and raises its `ready` counter to this step's number. Wait returns once
every rank is ready. The sum is read where the copies lie: a fused loop reading the wait's
value adds every rank's copy in rank order (the slots window_slots gives for it, read by
codegen._fused_parts), so the optimizer's update reads the ranks' gradients once and
nothing writes the sum. A wait
whose value anything else reads (a slice of a bucket of small gradients, a kernel) sums
the copies into its own buffer. Only a rank itself writes its own counters and
statistics; release stores and acquire loads order the data around them. Every wait on a
counter is bounded by the job's timeout, as MPI's path is.
"""
from ...distributed.faults import SPIN_SECONDS
from ...distributed.shared import CALLS, counter_index
from .loops import ctype

NO_WINDOW = -72     # kiln_run's return code when a program summing in place has no window


def _ready(rank, bucket):
    """C lvalue of the `ready` counter of `bucket` in rank's region."""
    return f"((int64_t *)(base + ({rank}) * stride))[{counter_index(bucket)}]"


def _head(table=None):
    """C naming the window (and H, when `table` is the C expression of the handle table)
    and `odd`, the parity of this call of the program."""
    named = "" if table is None else f"      const int64_t *H = (const int64_t *){table};\n"
    return named + f"""      typedef double (*wtime_t)(void);
      typedef void (*failed_t)(double, int);
      failed_t failed = (failed_t)(intptr_t)H[5];
      wtime_t wtime = (wtime_t)(intptr_t)H[4];
      char *base = (char *)(intptr_t)H[12];
      int64_t stride = H[13];
      int64_t odd = base ? ((int64_t *)(base + H[1] * stride))[{CALLS}] & 1 : 0;
      (void)wtime; (void)failed; (void)odd;
"""


def _copy_of(node, rank):
    """C pointer expression to rank's copy of node's bucket in this call's zone."""
    a = node.attrs
    return f"(base + ({rank}) * stride + {a['offset']} + odd * (int64_t){a['zone']})"


def _spin(until):
    """C spinning until the C condition `until` holds, against the deadline."""
    return f"""      {{
        int64_t polls = 0;
        double since = 0.0;
        int yielding = 0;
        while (!({until})) {{
          if ((++polls & 1023) == 0) {{
            double now = wtime();
            if (since == 0.0) since = now;
            double waited = now - since;
            if (waited > (double)H[11] / 1000.0) failed(waited, 0);
            yielding = waited > {SPIN_SECONDS!r};
          }}
          if (yielding) {{
            extern int sched_yield(void);
            sched_yield();     /* the peer may share this core: let it run */
          }}
        }}
      }}
"""


def start(node, nbytes):
    """The shm branch of allreduce_start: `in` (C pointer name) into this rank's region.
    No rank still reads this zone: see shared.py."""
    ready = _ready("H[1]", node.attrs["bucket"])
    return (_head()
            + f"      int64_t step = __atomic_load_n(&{ready}, __ATOMIC_RELAXED) + 1;\n"
            + f"      char *mine = {_copy_of(node, 'H[1]')};\n"
            + "      if ((const void *)in != (const void *)mine) "
            + f"memcpy(mine, in, {nbytes});   /* else computed there */\n"
            + f"      __atomic_store_n(&{ready}, step, __ATOMIC_RELEASE);\n")


def wait(node, summed_in_place):
    """The shm branch of allreduce_wait: every rank's copy is there once this returns;
    unless the loops reading the value sum them (summed_in_place), `out` = their sum in
    rank order."""
    b, T, n = node.attrs["bucket"], ctype(node.dtype), node.size
    code = (_head()
            + f"      int64_t step = __atomic_load_n(&{_ready('H[1]', b)}, __ATOMIC_RELAXED);\n"
            + "      double *seconds = (double *)(base + H[1] * stride);  /* waiting, summing */\n"
            + "      double t0 = wtime();\n"
            + "      for (int64_t r = 0; r < H[0]; r++)\n"
            + _spin(f"__atomic_load_n(&{_ready('r', b)}, __ATOMIC_ACQUIRE) >= step")
            + "      double t1 = wtime();\n"
            + "      seconds[0] += t1 - t0;\n")
    if summed_in_place:
        return code
    return (code
            + f"      const {T} *restrict d0 = (const {T} *){_copy_of(node, 0)};\n"
            + f"      const {T} *restrict d1 = (const {T} *){_copy_of(node, 1)};\n"
            + f"      {T} *restrict s = out;\n"
            + f"      for (int64_t i = 0; i < {n}; i++) s[i] = d0[i] + d1[i];\n"
            + "      for (int64_t r = 2; r < H[0]; r++) {\n"
            + f"        const {T} *restrict d = (const {T} *){_copy_of(node, 'r')};\n"
            + f"        for (int64_t i = 0; i < {n}; i++) s[i] += d[i];\n"
            + "      }\n"
            + "      seconds[1] += wtime() - t1;\n")


def _windowed(node):
    return node.op in ("allreduce_start", "allreduce_wait") and node.attrs.get("bucket", -1) >= 0


def _summed_in_place(steps, graph, ranks):
    """The windowed sum-waits whose every reader is a fused loop (which can add the ranks'
    copies as it reads them): not a graph output, not a mean (which scales its output)."""
    readers = {}
    for s in steps:
        inside = {id(n) for n in s.nodes}
        for n in s.nodes:
            # a wait's inputs after the handle table only order the schedule
            read = n.inputs[:2] if n.op == "allreduce_wait" else n.inputs
            for i in read:
                if id(i) not in inside:
                    readers.setdefault(id(i), set()).add(s.kind)
    outputs = {id(o) for o in graph.outputs}
    return [s.sink for s in steps
            if s.sink.op == "allreduce_wait" and _windowed(s.sink) and ranks > 1
            and s.sink.inputs[0].op == "allreduce_start"
            and s.sink.attrs.get("op") == "sum" and id(s.sink) not in outputs
            and readers.get(id(s.sink), set()) == {"fused"}]


def window_slots(em, graph, steps, storage, ranks):
    """Table slots that point into the shared window, and the C to run first.

    Returns ({id(node): slot} for values computed straight into the window, C lines,
    {id(wait): [slot of each rank's copy]} for the waits summed where they are read).
    - A start whose input is the whole result of one step (a weight gradient's matmul,
      the concatenation of a bucket of small ones): that input is computed straight into
      this rank's region, where the start would copy it.
    - A sum-wait whose readers are all fused loops: slots pointing at every rank's copy,
      which those loops add as they read them (codegen._fused_parts).
    The first C line counts this call (its parity picks the zone). A graph output is never
    in the window (the next step overwrites it)."""
    windowed = [s.sink for s in steps if _windowed(s.sink)]
    if not windowed:
        return {}, [], {}
    table = f"P[{storage(windowed[0].inputs[1])}]"
    producer = {id(s.sink): s for s in steps}
    outputs = {id(o) for o in graph.outputs}
    slots, sums, code = {}, {}, []

    def bind(node, rank, fallback, what):
        slot = em.add_slot(("bound", f"{node.name} in the shared window"))
        copy = _copy_of(node, rank)
        code.append(f"""  {{ /* {what} */
{_head(table)}      P[{slot}] = H[0] > 1 && H[12] != 0 ? (void *){copy} : {fallback};
  }}""")
        return slot

    for wait_ in _summed_in_place(steps, graph, ranks):
        sums[id(wait_)] = [bind(wait_, r, "0", f"{wait_.name}: rank {r}'s copy, summed where "
                                "it is read") for r in range(ranks)]
    for s in steps:
        node = s.sink
        if node.op != "allreduce_start" or not _windowed(node) or id(node) in outputs:
            continue
        x = node.inputs[0]
        made = producer.get(id(x))
        if made is None or id(x) in outputs or id(x) in slots \
                or made.kind not in ("fused", "op") and not (made.kind == "matmul"
                                                             and len(made.nodes) == 1):
            continue      # a parameter, an input, a view, or a matmul with an epilogue
        fallback = f"P[{em.new_buffer(x.size * x.dtype.itemsize)}]"
        slots[id(x)] = slots[id(node)] = bind(
            node, "H[1]", fallback, f"{x.name}: computed straight into the shared window")
    # summing where the sum is read needs the window: without one (never made so by
    # kiln.distributed) the program fails rather than read nothing
    missing = f"\n    else return {NO_WINDOW};" if sums else ""
    code.insert(0, f"""  {{ /* count this call: its parity picks the zone of the shared window */
    const int64_t *H = (const int64_t *){table};
    if (H[0] > 1 && H[12] != 0)
      ((int64_t *)((char *)(intptr_t)H[12] + H[1] * H[13]))[{CALLS}] += 1;{missing}
  }}""")
    return slots, code, sums
