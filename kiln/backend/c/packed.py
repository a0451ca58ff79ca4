"""Weights packed once for the BLAS, reused while no array was written.

At the batch sizes kiln serves (a few to a hundred rows), MKL multiplies by a weight matrix
much faster when the weight is first copied into its internal panel layout
(`cblas_sgemm_pack`, then `cblas_sgemm_compute`): measured single-threaded here, 64 x 128 x
512 took 132 us unpacked and 84 us packed. Packing costs about as much as a multiply, so it
only pays when the packed copy outlives the call. This is how ONNX Runtime prepacks its
initializers and how MXNet's MKL-DNN backend caches reordered weights.

A packed copy is only valid while its weight is unchanged. kiln counts writes instead of
comparing data: `kiln_rt_writes` goes up after kiln writes into an array (in-place ops,
setitem, optimizers, set_data, a compiled step's parameter updates) and when it binds a
program's parameter to a different array (see kiln/_core/writes.py). Each call site of a
program keeps one cache; it packs on the second call in a row that sees the same count
and the same weight pointer, and uses the packs until either changes. A training loop
writes between calls, so it never pays for packing; inference packs once.

Memory: each compiled signature (each batch size from 8 to 128 rows) keeps its own packed
copy of each Dense weight, as large as the weight. A cache frees its packs as soon as they
are stale, and the packs of the whole process stop at PACK_BUDGET_BYTES; past that, calls
run unpacked.

Only MKL offers the pack API; with another BLAS (or none) the call is an ordinary gemm.
The C is csrc/packed.c, part of the runtime library (runtime.py).
"""

# the pack pays from this many rows (below, kiln's own loops or MKL's unpacked kernels win)
# up to this many (above, MKL packs internally anyway); measured on 4..1024 rows
PACK_MIN_ROWS = 8
PACK_MAX_ROWS = 128
# columns per parallel block: narrower packed blocks lose to the unpacked call
PACK_MIN_BLOCK_COLUMNS = 64
# blocks per thread, as for the unpacked gemm (runtime.py)
PACK_BLOCKS_PER_THREAD = 2
# packed copies in the whole process stop growing here (bytes)
PACK_BUDGET_BYTES = 1 << 28

# what csrc/packed.c takes from Python (runtime.source_for puts them first)
DEFINES = {"PACK_MIN_ROWS": PACK_MIN_ROWS, "PACK_MAX_ROWS": PACK_MAX_ROWS,
           "PACK_MIN_BLOCK_COLUMNS": PACK_MIN_BLOCK_COLUMNS,
           "PACK_BLOCKS_PER_THREAD": PACK_BLOCKS_PER_THREAD,
           "PACK_BUDGET": f"{PACK_BUDGET_BYTES}LL"}
