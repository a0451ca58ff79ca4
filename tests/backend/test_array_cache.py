"""kiln/backend/c/array_cache.py: NumPy's data allocator keeps large freed blocks and hands
them back for requests of the same size, with every NumPy allocation path still right."""
import os
import subprocess
import sys

import numpy as onp
import pytest

from kiln.backend.c import array_cache, build

pytestmark = pytest.mark.skipif(not build.available(), reason="no working C compiler")

N = array_cache.MIN_BYTES // 4          # float32 elements of the smallest cached block


def _handler_name():
    core = getattr(onp, "_core", None) or onp.core
    return core.multiarray.get_handler_name()


def test_a_freed_large_block_serves_the_next_request_of_its_size():
    assert array_cache.install()
    assert _handler_name() == "kiln_array_cache"
    a = onp.arange(N, dtype=onp.float32)
    del a                                           # the block goes to the cache
    before = array_cache.stats()
    assert before["blocks"] >= 1
    b = onp.empty(N, onp.float32)
    assert array_cache.stats()["hits"] == before["hits"] + 1
    b[:] = 7
    assert (b == 7).all()


def test_every_allocation_path_gives_right_contents_through_the_cache():
    assert array_cache.install()
    dirty = onp.full(N, 3.0, onp.float32)
    del dirty
    zeros = onp.zeros(N, onp.float32)               # calloc: a reused block is zeroed
    assert not zeros.any()
    grown = onp.arange(N, dtype=onp.float32)
    grown.resize(2 * N, refcheck=False)             # realloc: the old contents move along
    onp.testing.assert_array_equal(grown[:N], onp.arange(N, dtype=onp.float32))
    assert not grown[N:].any()
    grown.resize(N // 2, refcheck=False)
    onp.testing.assert_array_equal(grown, onp.arange(N // 2, dtype=onp.float32))
    small = [onp.arange(k) for k in range(300)]     # small blocks: the system allocator
    assert all(int(s.sum()) == k * (k - 1) // 2 for k, s in enumerate(small))
    larger = onp.ones(N + 1, onp.float32)           # never a cached block that is too small
    assert larger.sum() == N + 1


def test_a_block_larger_than_the_limit_is_not_kept():
    assert array_cache.install()
    before = array_cache.stats()
    big = onp.empty(array_cache.LIMIT_BYTES + 64, onp.uint8)
    del big
    after = array_cache.stats()
    assert after["cached_bytes"] <= before["cached_bytes"]   # (the miss gave some back)
    assert after["blocks"] <= before["blocks"]


def test_a_forked_child_allocates_through_the_cache_while_the_parent_holds_blocks():
    code = ("import os, numpy as onp\n"
            "from kiln.backend.c import array_cache\n"
            "assert array_cache.install()\n"
            f"keep = [onp.ones({N}, onp.float32) for _ in range(3)]\n"
            "del keep[1]\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            f"    a = onp.ones({N}, onp.float32); b = onp.zeros({N}, onp.float32)\n"
            f"    os._exit(0 if a.sum() == {N} and not b.any() else 3)\n"
            "_, status = os.waitpid(pid, 0)\n"
            "assert os.WEXITSTATUS(status) == 0, status\n"
            "print('ok')\n")
    repo = os.path.abspath(os.path.join(os.path.dirname(array_cache.__file__), "..", "..", ".."))
    env = dict(os.environ, PYTHONPATH=repo)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_a_size_the_cache_does_not_hold_first_returns_as_much_to_the_system():
    """The cache never adds to the peak: a miss gives back cached blocks of at least the
    requested size before new memory is taken."""
    assert array_cache.install()
    held = [onp.empty(N, onp.float32) for _ in range(3)]
    del held                                        # three blocks of N floats cached
    before = array_cache.stats()
    assert before["blocks"] >= 3
    other = onp.empty(2 * N + 16, onp.float32)      # no cached block has this size
    after = array_cache.stats()
    assert after["misses"] == before["misses"] + 1
    assert before["cached_bytes"] - after["cached_bytes"] >= min(other.nbytes,
                                                                 before["cached_bytes"])
