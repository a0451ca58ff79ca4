"""C for the allreduce op: a nonblocking MPI_Iallreduce polled against a deadline.

The MPI entry points and handles come from the op's second input, the handle table laid
out in kiln/distributed/lowering.py. Polling (rather than a blocking MPI_Allreduce) is what
bounds the wait: past the timeout, or on an MPI error code, the code calls back into
Python, which aborts the job with a message instead of hanging or going on with
gradients that were never reduced.
"""
from ...distributed.faults import SPIN_SECONDS
from .loops import ctype

_MAX_COUNT = (1 << 31) - 1     # MPI counts are C ints


def allreduce(node, ptr):
    x, table = node.inputs
    if node.size > _MAX_COUNT:
        from .codegen import NotLowerable
        raise NotLowerable(f"allreduce of {node.size} elements (MPI counts are 32-bit)")
    T = ctype(node.dtype)
    nbytes = node.size * node.dtype.itemsize
    mpi_type = "H[7]" if node.dtype.itemsize == 4 else "H[8]"
    scale = ("" if node.attrs.get("op", "mean") == "sum" else
             f"    {{ {T} s = ({T})(1.0 / (double)H[0]);\n"
             f"      for (int64_t i = 0; i < {node.size}; i++) out[i] *= s; }}\n")
    return f"""  {{
    const int64_t *H = (const int64_t *){ptr(table)};
    const {T} *in = {ptr(x)};
    {T} *out = {ptr(node)};
    if (H[0] <= 1) {{
      if ((const void *)out != (const void *)in) memcpy(out, in, {nbytes});
    }} else {{
      typedef int (*iallreduce_t)(const void *, void *, int, intptr_t, intptr_t, intptr_t,
                                  void *);
      typedef int (*test_t)(void *, int *, void *);
      typedef double (*wtime_t)(void);
      typedef void (*failed_t)(double, int);
      int64_t request = 0, status[8] = {{0}};
      int done = 0;
      const void *send = (const void *)out == (const void *)in ? (const void *)(intptr_t)H[10]
                                                             : (const void *)in;
      failed_t failed = (failed_t)(intptr_t)H[5];
      int rc = ((iallreduce_t)(intptr_t)H[2])(send, out, {node.size}, (intptr_t){mpi_type},
                                              (intptr_t)H[9], (intptr_t)H[6], &request);
      if (rc != 0) failed(0.0, rc);
      double start = ((wtime_t)(intptr_t)H[4])(), limit = (double)H[11] / 1000.0;
      double spin = {SPIN_SECONDS!r};
      int yielding = 0;
      for (int64_t polls = 1; !done; polls++) {{
        rc = ((test_t)(intptr_t)H[3])(&request, &done, status);
        if (rc != 0) failed(((wtime_t)(intptr_t)H[4])() - start, rc);
        if (done) break;
        if (yielding) {{
          /* waited past the spin: the peers may share these cores, let them run */
          extern int sched_yield(void);
          sched_yield();
        }}
        if ((polls & 63) == 0) {{
          double waited = ((wtime_t)(intptr_t)H[4])() - start;
          if (waited > limit) failed(waited, 0);
          yielding = waited > spin;
        }}
      }}
{scale}    }}
  }}"""
