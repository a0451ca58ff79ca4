/* How generated code calls oneDNN's shim (heavy.py): the run function and the write count
   that kiln_set_dnnl installs, and the stamp a weight gets. codegen.generate puts it in
   the programs that have heavy ops. */
#include <stdint.h>
typedef int (*kiln_dnnl_run_t)(void *, void *const *, const int64_t *);
static kiln_dnnl_run_t kiln_dnnl_run = 0;
static const uint64_t *kiln_dnnl_writes = 0;
void kiln_set_dnnl(void *run, void *writes) {
  kiln_dnnl_run = (kiln_dnnl_run_t)run; kiln_dnnl_writes = (const uint64_t *)writes;
}
static int64_t kiln_weight_stamp(void) {
  return kiln_dnnl_writes ? (int64_t)__atomic_load_n(kiln_dnnl_writes, __ATOMIC_ACQUIRE) + 1 : 0;
}
