"""C for an allreduce_start / allreduce_wait pair through a shared window (one machine).

The protocol and the window's layout are in kiln/distributed/shared.py. Start puts this
rank's copy of the bucket in its region (unless the gradients were computed there) and
raises its `ready` counter to this step's number. Wait, once every rank is ready, takes
chunks of the bucket off a shared counter, sums each over the ranks in rank order into
the result, counts it finished, and returns when every chunk is: the result (in rank 0's
region) is the op's output, read there by the update. Only a rank itself writes its own
counters and statistics; the shared chunk counters change by compare-and-swap. Release
stores and acquire loads order the data around them. Every wait on a counter is bounded
by the job's timeout, as MPI's path is.
"""
from ...distributed.faults import SPIN_SECONDS
from ...distributed.shared import counter_index
from .loops import ctype

CHUNK_BYTES = 1 << 16     # the unit of the sum the ranks share out: whole cache lines
_TAG_SHIFT = 24           # a chunk counter is step << 24 | chunks (fewer than 2^24 chunks)
_READY, _CLAIMED, _FINISHED = 0, 1, 2


def _counter(rank, bucket, which):
    """C lvalue of a counter of `bucket` in rank's region."""
    return f"((int64_t *)(base + ({rank}) * stride))[{counter_index(bucket, which)}]"


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


def _head():
    return """      typedef double (*wtime_t)(void);
      typedef void (*failed_t)(double, int);
      failed_t failed = (failed_t)(intptr_t)H[5];
      wtime_t wtime = (wtime_t)(intptr_t)H[4];
      char *base = (char *)(intptr_t)H[12];
      int64_t stride = H[13];
      (void)wtime;
"""


def start(node, nbytes):
    """The shm branch of allreduce_start: `in` (C pointer name) into this rank's region.
    No rank still reads the previous step's copy: this rank's last wait on the bucket saw
    every chunk of it summed."""
    b, offset = node.attrs["bucket"], node.attrs["offset"]
    ready = _counter("H[1]", b, _READY)
    return (_head()
            + f"      int64_t step = __atomic_load_n(&{ready}, __ATOMIC_RELAXED) + 1;\n"
            + "      char *mine = base + H[1] * stride + " + str(offset) + ";\n"
            + "      if ((const void *)in != (const void *)mine) "
            + f"memcpy(mine, in, {nbytes});   /* else computed there */\n"
            + f"      __atomic_store_n(&{ready}, step, __ATOMIC_RELEASE);\n")


def wait(node):
    """The shm branch of allreduce_wait: `out` = the ranks' copies summed in rank order,
    each chunk by whichever rank takes it."""
    b, offset, result = node.attrs["bucket"], node.attrs["offset"], node.attrs["result"]
    T, n = ctype(node.dtype), node.size
    per_chunk = max(1, CHUNK_BYTES // node.dtype.itemsize)
    chunks = -(-n // per_chunk)
    claimed, finished = _counter(0, b, _CLAIMED), _counter(0, b, _FINISHED)
    return (_head()
            + f"      int64_t step = __atomic_load_n(&{_counter('H[1]', b, _READY)}, "
              "__ATOMIC_RELAXED);\n"
            + f"      const int64_t tag = step << {_TAG_SHIFT}, chunks = {chunks};\n"
            + f"      {T} *sum = ({T} *)(base + {result});\n"
            + "      double *seconds = (double *)(base + H[1] * stride);  /* waiting, summing */\n"
            + "      double t0 = wtime();\n"
            + "      for (int64_t r = 0; r < H[0]; r++)\n"
            + _spin(f"__atomic_load_n(&{_counter('r', b, _READY)}, __ATOMIC_ACQUIRE) >= step")
            + "      double t1 = wtime();\n"
            + "      for (;;) {\n"
            + f"        int64_t seen = __atomic_load_n(&{claimed}, __ATOMIC_RELAXED);\n"
            + "        int64_t k = seen < tag ? 0 : seen - tag;     /* the next chunk */\n"
            + "        if (k >= chunks) break;\n"
            + f"        if (!__atomic_compare_exchange_n(&{claimed}, &seen, tag + k + 1, 0,\n"
            + "                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED))\n"
            + "          continue;     /* a peer took it */\n"
            + f"        int64_t lo = k * {per_chunk}, hi = lo + {per_chunk} < {n} ? "
              f"lo + {per_chunk} : {n};\n"
            + f"        {T} *restrict s = sum;\n"
            + f"        const {T} *restrict d0 = (const {T} *)(base + {offset});\n"
            + f"        const {T} *restrict d1 = (const {T} *)(base + stride + {offset});\n"
            + "        for (int64_t i = lo; i < hi; i++) s[i] = d0[i] + d1[i];\n"
            + "        for (int64_t r = 2; r < H[0]; r++) {\n"
            + f"          const {T} *restrict d = (const {T} *)(base + r * stride + {offset});\n"
            + "          for (int64_t i = lo; i < hi; i++) s[i] += d[i];\n"
            + "        }\n"
            + f"        int64_t count = __atomic_load_n(&{finished}, __ATOMIC_RELAXED);\n"
            + f"        while (!__atomic_compare_exchange_n(&{finished}, &count,\n"
            + "                                            (count < tag ? tag : count) + 1, 0,\n"
            + "                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED))\n"
            + "          ;\n"
            + "      }\n"
            + "      double t2 = wtime();\n"
            + _spin(f"__atomic_load_n(&{finished}, __ATOMIC_ACQUIRE) >= tag + chunks")
            + "      seconds[0] += (t1 - t0) + (wtime() - t2);\n"
            + "      seconds[1] += t2 - t1;\n"
            + f"      if ((void *)out != (void *)sum) memcpy(out, sum, {n * node.dtype.itemsize});\n")


def window_slots(em, graph, steps, storage):
    """Table slots that point into the shared window: ({id(node): slot}, C to run first).

    - A start whose input is the whole result of one step (a weight gradient's matmul,
      the concatenation of a bucket of small ones): that input, and the start itself, are
      computed straight into this rank's region, where the start would copy them.
    - A wait of a sum: its output is the result the ranks summed, read where it lies (a
      mean scales its output, so it keeps a buffer of its own).
    Without a window (one process, or MPI's path) the slots point at buffers of their own.
    A graph output is never in the window (the next step overwrites it)."""
    producer = {id(s.sink): s for s in steps}
    outputs = {id(o) for o in graph.outputs}
    output_storage = {storage(o) for o in graph.outputs}
    slots, code = {}, []

    def bind(nodes, node, where, what):
        slot = em.add_slot(("bound", f"{node.name} in the shared window"))
        fallback = em.new_buffer(node.size * node.dtype.itemsize)
        for n in nodes:
            slots[id(n)] = slot
        code.append(f"""  {{ /* {what} */
    const int64_t *H = (const int64_t *)P[{storage(node.inputs[1])}];
    P[{slot}] = H[0] > 1 && H[12] != 0 ? (void *)((char *)(intptr_t)H[12] + {where})
                                       : P[{fallback}];
  }}""")

    for s in steps:
        node = s.sink
        if node.attrs.get("bucket", -1) < 0 or id(node) in outputs:
            continue
        if node.op == "allreduce_wait" and node.inputs[0].op == "allreduce_start" \
                and node.attrs.get("op") == "sum" and storage(node) not in output_storage:
            bind([node], node, node.attrs["result"],
                 f"{node.name}: the gradients the ranks summed, read where they lie")
        if node.op != "allreduce_start":
            continue
        x = node.inputs[0]
        made = producer.get(id(x))
        if made is None or id(x) in outputs or id(x) in slots \
                or made.kind not in ("fused", "op") and not (made.kind == "matmul"
                                                             and len(made.nodes) == 1):
            continue      # a parameter, an input, a view, or a matmul with an epilogue
        bind([x, node], node, f"H[1] * H[13] + {node.attrs['offset']}",
             f"{x.name}: computed straight into the shared window")
    return slots, code
