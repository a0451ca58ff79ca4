"""C for an allreduce_start / allreduce_wait pair through a shared window (one machine).

The protocol and the window's layout are in kiln/distributed/shared.py. Each bucket has,
in every rank's region, a `ready` flag (the step whose data this rank has copied in) and a
`done` flag (the step whose data of all ranks this rank has read). Start copies the bucket
in once every rank has read the previous step's copy, then raises `ready`; wait sums the
ranks' copies in rank order once every rank's `ready` has come (with two ranks, its own
term read from its own buffer instead), then raises `done`. Only a
rank itself writes its flags; release stores and acquire loads order the data around them.
Every wait on a flag is bounded by the job's timeout, as MPI's path is.
"""
from ...distributed.faults import SPIN_SECONDS
from ...distributed.shared import LINE
from .loops import ctype

_FLAG_STRIDE = LINE // 8     # int64 flags, one per cache line


def _flag(rank, bucket, which):
    """C lvalue of a flag (which: 0 ready, 1 done) of bucket in rank's region."""
    index = (2 * bucket + which) * _FLAG_STRIDE
    return f"((int64_t *)(base + ({rank}) * stride))[{index}]"


def _await(flag, want):
    """C spinning until `flag` >= want for every rank r, against the deadline."""
    return f"""      for (int64_t r = 0; r < H[0]; r++) {{
        int64_t polls = 0;
        double since = 0.0;
        int yielding = 0;
        while (__atomic_load_n(&{flag}, __ATOMIC_ACQUIRE) < {want}) {{
          if ((++polls & 1023) == 0) {{
            double now = ((wtime_t)(intptr_t)H[4])();
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


def _head():
    return """      typedef double (*wtime_t)(void);
      typedef void (*failed_t)(double, int);
      failed_t failed = (failed_t)(intptr_t)H[5];
      char *base = (char *)(intptr_t)H[12];
      int64_t stride = H[13];
"""


def start(node, nbytes):
    """The shm branch of allreduce_start: `in` (C pointer name) into this rank's region."""
    b, offset = node.attrs["bucket"], node.attrs["offset"]
    ready = _flag("H[1]", b, 0)
    return (_head()
            + f"      int64_t step = __atomic_load_n(&{ready}, __ATOMIC_RELAXED) + 1;\n"
            + "      char *mine = base + H[1] * stride + " + str(offset) + ";\n"
            + "      if ((const void *)in != (const void *)mine) {   /* else computed there */\n"
            + "        /* every rank has read what this rank copied in last step */\n"
            + _await(_flag("r", b, 1), "step - 1")
            + f"        memcpy(mine, in, {nbytes});\n"
            + "      }\n"
            + "      /* the wait reads this rank's own term from `out` */\n"
            + f"      if ((const void *)out != (const void *)in) memcpy(out, in, {nbytes});\n"
            + f"      __atomic_store_n(&{ready}, step, __ATOMIC_RELEASE);\n")


def wait(node):
    """The shm branch of allreduce_wait: `out` = the ranks' copies summed in rank order."""
    b, offset = node.attrs["bucket"], node.attrs["offset"]
    T, n = ctype(node.dtype), node.size
    return (_head()
            + f"      int64_t step = __atomic_load_n(&{_flag('H[1]', b, 0)}, "
              "__ATOMIC_RELAXED);\n"
            + _await(_flag("r", b, 0), "step")
            + "      /* this rank's own term from its own buffer, still in its cache */\n"
            + f"      const {T} *d0 = H[1] == 0 ? in : (const {T} *)(base + {offset});\n"
            + f"      const {T} *d1 = H[1] == 1 ? in : (const {T} *)(base + stride + {offset});\n"
            + "      if (H[0] == 2) {\n"
            + f"        for (int64_t i = 0; i < {n}; i++) out[i] = d0[i] + d1[i];\n"
            + "      } else {     /* `out` may be `in`: every term from the window */\n"
            + f"        d0 = (const {T} *)(base + {offset});\n"
            + f"        for (int64_t i = 0; i < {n}; i++) out[i] = d0[i];\n"
            + "        for (int64_t r = 1; r < H[0]; r++) {\n"
            + f"          const {T} *d = (const {T} *)(base + r * stride + {offset});\n"
            + f"          for (int64_t i = 0; i < {n}; i++) out[i] += d[i];\n"
            + "        }\n      }\n"
            + f"      __atomic_store_n(&{_flag('H[1]', b, 1)}, step, __ATOMIC_RELEASE);\n")


def direct_writes(em, graph, steps, ptr):
    """Let a bucket's gradients be computed straight into this rank's region of the
    window, where the start would copy them: ({id(node): table slot}, C to run first).

    For a start whose input is the whole result of one step (a weight gradient's matmul,
    the concatenation of a bucket of small ones), that input and the start itself are
    stored at a table slot that the program, before anything else, points into the window
    (or, when the table has no window, at a buffer of its own). The program first waits
    until every rank has read the previous step's data there: it is about to overwrite it.
    """
    producer = {id(s.sink): s for s in steps}
    outputs = {id(o) for o in graph.outputs}
    slots, code = {}, []
    for s in steps:
        node = s.sink
        if node.op != "allreduce_start" or node.attrs.get("bucket", -1) < 0:
            continue
        x = node.inputs[0]
        made = producer.get(id(x))
        if made is None or id(x) in outputs or id(node) in outputs or id(x) in slots \
                or made.kind not in ("fused", "op") and not (made.kind == "matmul"
                                                             and len(made.nodes) == 1):
            continue      # a parameter, an input, a view, or a matmul with an epilogue
        slot = em.add_slot(("bound", f"{node.name} in the shared window"))
        fallback = em.new_buffer(node.size * node.dtype.itemsize)
        slots[id(x)] = slots[id(node)] = slot
        b, offset = node.attrs["bucket"], node.attrs["offset"]
        ready = _flag("H[1]", b, 0)
        code.append(f"""  {{ /* {x.name}: computed straight into the shared window */
    const int64_t *H = (const int64_t *){ptr(node.inputs[1])};
    P[{slot}] = P[{fallback}];
    if (H[0] > 1 && H[12] != 0) {{
{_head()}      int64_t step = __atomic_load_n(&{ready}, __ATOMIC_RELAXED) + 1;
{_await(_flag("r", b, 1), "step - 1")}      P[{slot}] = base + H[1] * stride + {offset};
    }}
  }}""")
    return slots, code
