"""C for the allreduce ops: a nonblocking MPI_Iallreduce polled against a deadline.

The MPI entry points and handles come from the ops' second input, the handle table laid
out in kiln/distributed/lowering.py. Polling (rather than a blocking MPI_Allreduce) is what
bounds the wait: past the timeout, or on an MPI error code, the code calls back into
Python, which aborts the job with a message instead of hanging or going on with
gradients that were never reduced.

`allreduce` posts and completes in one place. `allreduce_start` posts on its output buffer
and leaves the MPI request in a small buffer of its own; `allreduce_wait` (whose first
input is that start) completes it. In between, MPI may read and write the started buffer:
the memory plan keeps it alive and untouched until the wait reads it, and a start whose
input lives on elsewhere first copies it, so MPI never holds a buffer the plan reuses.
A start/wait pair numbered with a bucket goes through the ranks' shared window instead
when the handle table has one (shared_reduce.py; one machine). The three are registered as
their ops' C lowerings (lowering.Kernel); codegen runs `progress` after every step.
"""
from ...distributed.faults import SPIN_SECONDS
from .loops import ctype
from .lowering import NotLowerable, register_kernels
from . import shared_reduce

_MAX_COUNT = (1 << 31) - 1     # MPI counts are C ints

_TYPES = """      typedef int (*iallreduce_t)(const void *, void *, int, intptr_t, intptr_t,
                                  intptr_t, void *);
      typedef int (*test_t)(void *, int *, void *);
      typedef double (*wtime_t)(void);
      typedef void (*failed_t)(double, int);
      failed_t failed = (failed_t)(intptr_t)H[5];
"""


def _check(node):
    if node.size > _MAX_COUNT:
        raise NotLowerable(f"{node.op} of {node.size} elements (MPI counts are 32-bit)")


def _head(node, x, table, ptr):
    """Names H, in and out; one process copies, several go on in the else branch."""
    T = ctype(node.dtype)
    return f"""    const int64_t *H = (const int64_t *){ptr(table)};
    const {T} *in = {ptr(x)};
    {T} *out = {ptr(node)};
    if (H[0] <= 1) {{
{_copy(node)}    }} else {{
"""


def _post(node, request, send):
    """Post the sum over ranks of `send` (a pointer, or H[10]: MPI_IN_PLACE) into `out`."""
    mpi_type = "H[7]" if node.dtype.itemsize == 4 else "H[8]"
    return f"""      int rc = ((iallreduce_t)(intptr_t)H[2])({send}, out, {node.size},
                                              (intptr_t){mpi_type}, (intptr_t)H[9],
                                              (intptr_t)H[6], {request});
      if (rc != 0) failed(0.0, rc);
"""


_IN_PLACE_OR_IN = ("(const void *)out == (const void *)in ? (const void *)(intptr_t)H[10] "
                   ": (const void *)in")


def _poll(request):
    """Poll `request` to completion against the deadline."""
    return f"""      int64_t status[8] = {{0}};
      int done = 0, yielding = 0;
      double start = ((wtime_t)(intptr_t)H[4])(), limit = (double)H[11] / 1000.0;
      double spin = {SPIN_SECONDS!r};
      for (int64_t polls = 1; !done; polls++) {{
        int rc = ((test_t)(intptr_t)H[3])({request}, &done, status);
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
"""


def _scale(node):
    """Divide `out` by the number of ranks for a mean (MPI only sums)."""
    if node.attrs.get("op", "mean") == "sum":
        return ""
    T = ctype(node.dtype)
    return (f"      {{ {T} s = ({T})(1.0 / (double)H[0]);\n"
            f"        for (int64_t i = 0; i < {node.size}; i++) out[i] *= s; }}\n")


def _copy(node):
    return ("      if ((const void *)out != (const void *)in) "
            f"memcpy(out, in, {node.size * node.dtype.itemsize});\n")


def allreduce(node, ptr):
    _check(node)
    x, table = node.inputs
    return ("  {\n" + _head(node, x, table, ptr) + _TYPES + "      int64_t request = 0;\n"
            + _post(node, "&request", _IN_PLACE_OR_IN) + _poll("&request") + _scale(node)
            + "    }\n  }")


def _request_slot(em, start):
    """The table slot of the small buffer that holds `start`'s MPI request."""
    slots = em.__dict__.setdefault("mpi_requests", {})
    if id(start) not in slots:
        slots[id(start)] = em.new_buffer(16)     # an MPI_Request: an int or a pointer
    return slots[id(start)]


def allreduce_start(node, ptr, em):
    _check(node)
    x, table = node.inputs
    request = f"(void *)P[{_request_slot(em, node)}]"
    # reduce in `out`, copied from `in` first if need be: `in` may be reused once this
    # step is done, while `out` stays the wait's until then
    mpi = _TYPES + _copy(node) + _post(node, request, "(const void *)(intptr_t)H[10]")
    return "  {\n" + _head(node, x, table, ptr) + _shared_or(
        node, lambda: shared_reduce.start(node, node.size * node.dtype.itemsize), mpi) \
        + "    }\n  }"


def allreduce_wait(node, ptr, em):
    _check(node)
    started, table = node.inputs[:2]
    if started.op != "allreduce_start":     # nothing in flight: the value passes on
        return (f"  {{\n    const void *in = {ptr(started)};\n    void *out = {ptr(node)};\n"
                + _copy(node) + "  }")
    request = f"(void *)P[{_request_slot(em, started)}]"
    mpi = _TYPES + _poll(request) + _copy(node)
    return ("  {\n" + _head(node, started, table, ptr)
            + _shared_or(node, lambda: shared_reduce.wait(node, id(node) in em.window_sums), mpi)
            + _scale(node)
            + "    }\n  }")


def _shared(node):
    return node.attrs.get("bucket", -1) >= 0


def _shared_or(node, shared, mpi):
    """Through the shared window when the handle table has one (H[12]), else MPI;
    shared() makes the window's C."""
    if not _shared(node):
        return mpi
    return ("      if (H[12] != 0) {\n" + shared() + "      } else {\n" + mpi + "      }\n")


register_kernels({"allreduce": allreduce})
# these two also take the Emitter: the request passes between them in a buffer of its own
register_kernels({"allreduce_start": allreduce_start, "allreduce_wait": allreduce_wait},
                 with_emitter=True)


def progress(em, node, ptr):
    """C to run after the step that computed `node`: with messages in flight (started, not
    yet waited on), one MPI_Test, because MPI moves a message only inside MPI calls when
    each rank has a single thread. Tracks the messages in flight as the steps go by."""
    flying = em.__dict__.setdefault("mpi_in_flight", [])
    if node.op == "allreduce_start":
        flying.append(node)
        return ""
    if node.op == "allreduce_wait":
        if node.inputs[0] in flying:
            flying.remove(node.inputs[0])
        return ""
    if not flying:
        return ""
    oldest = flying[0]
    through_mpi = " && H[12] == 0" if _shared(oldest) else ""
    return f"""  {{ /* let MPI move the messages in flight */
    const int64_t *H = (const int64_t *){ptr(oldest.inputs[1])};
    if (H[0] > 1{through_mpi}) {{
      int done = 0;
      int64_t status[8] = {{0}};
      typedef int (*test_t)(void *, int *, void *);
      typedef void (*failed_t)(double, int);
      int rc = ((test_t)(intptr_t)H[3])((void *)P[{_request_slot(em, oldest)}], &done, status);
      if (rc != 0) ((failed_t)(intptr_t)H[5])(0.0, rc);
    }}
  }}"""
