"""A dist_sync KVStore across ranks: run by tests/distributed/test_kvstore_mpi.py under
`mpiexec -n 2`."""
import numpy as np

import kiln
from kiln import kvstore

kv = kvstore.create("dist_sync")
rank, workers = kv.rank, kv.num_workers
assert workers == 2, workers
kv.init("w", kiln.nd.ones((3,)) * (rank + 1))          # rank 0's value wins
out = kiln.nd.zeros((3,))
kv.pull("w", out=out)
np.testing.assert_allclose(out.asnumpy(), 1.0)
kv.push("w", [kiln.nd.ones((3,)) * (rank + 1), kiln.nd.ones((3,))])   # 2 "devices"
kv.pull("w", out=out)
np.testing.assert_allclose(out.asnumpy(), (1 + 1) + (2 + 1))           # summed over all
kv.set_optimizer(kiln.optimizer.SGD(learning_rate=0.1))
kv.init("v", kiln.nd.zeros((2,)))
kv.pushpull("v", kiln.nd.ones((2,)) * (rank + 1), out=out[:2])
got = kv._store["v"]
np.testing.assert_allclose(got, -0.1 * 3)                             # one update, sum 3
kv.barrier()
print(f"rank {rank}: kvstore ok", flush=True)
