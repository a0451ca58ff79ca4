"""A broadcast view is read-only: a write into it makes it an array of its own (eager kiln
rebinds it to a copy), while the views made of it before stay views of what it viewed,
as eager's still view that memory (kiln/_core/aliasing.py, _detach). Traced and recorded
code must agree with eager on both backends (kiln.fuzz.compare)."""
import numpy as onp
import pytest

from kiln import np
from kiln.fuzz.compare import compare

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")


def transposed_before_the_write(a0, a1):       # fuzz seed 4419027, #1379
    v1 = a1.copy()
    v3 = np.broadcast_to(v1, (2,) + v1.shape)
    v5 = v3.transpose()
    v3 += 2                     # v3 detaches; v5 still views v1
    v7 = np.swapaxes(v3, 0, 1)
    v5 += 1                     # v5 detaches too, from v1, not into v3
    return v7[::2], v3 * 1, v5 * 1, v1


def base_written_after_the_view_detached(a):
    b = a * 1
    v = np.broadcast_to(b, (3,) + b.shape)
    t = v[1:]
    v *= 2                      # v detaches; t still views b
    b += 1                      # so t sees this write, v does not
    return v * 1, t * 1, b


@pytest.mark.parametrize("fn", [transposed_before_the_write,
                                base_written_after_the_view_detached],
                         ids=lambda f: f.__name__)
def test_views_of_a_detached_broadcast_view_keep_viewing_its_source(fn):
    rng = onp.random.default_rng(24)
    n = fn.__code__.co_argcount

    def args():
        return [np.array(rng.uniform(-2, 2, (4,)).astype("float32")) for _ in range(n)]
    findings = compare(fn, args(), args(), strict=True)
    assert not findings, "\n".join(map(repr, findings))
