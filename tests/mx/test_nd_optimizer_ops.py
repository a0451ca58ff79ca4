"""nd's optimizer update operators against MXNet 1.9.1 on the same inputs (fixture made
with real MXNet: tests/fixtures/optimizer_ops/make_fixture.py): the returned weight and
every state array after the call; plus the mp_/multi_ forms against the plain ones."""
import json
import os

import numpy as onp
import pytest

from kiln import nd
from conftest import assert_close
from paths import FIXTURES

FIXTURE = os.path.join(FIXTURES, "optimizer_ops",
                       "optimizer_ops.npz")
DATA = onp.load(FIXTURE)
META = json.loads(str(DATA["meta"]))


@pytest.mark.parametrize("k", range(len(META)), ids=[m["name"] for m in META])
def test_update_equals_mxnet(k):
    case = META[k]
    arrays = [nd.array(DATA[f"{k}_in{i}"]) for i in range(case["inputs"])]
    weight = arrays[0]
    out = getattr(nd, case["name"])(*arrays, out=weight, **case["attrs"])
    assert out is weight
    assert_close(weight, DATA[f"{k}_out"], rtol=1e-5, atol=1e-6, msg=case["name"])
    for i, state in enumerate(arrays[2:]):
        assert_close(state, DATA[f"{k}_state{i}"], rtol=1e-5, atol=1e-6,
                     msg=f"{case['name']} state {i}")


def test_lamb_phase2_equals_mxnet():
    out = nd.lamb_update_phase2(nd.array(DATA["phase2_w"]), nd.array(DATA["phase2_g"]),
                                nd.array([1.5]), nd.array([0.5]), lr=0.1, lower_bound=0.1,
                                upper_bound=1.2)
    assert_close(out, DATA["phase2_out"], rtol=1e-6)


def test_mixed_precision_and_multi_forms_follow_the_plain_update():
    rng = onp.random.default_rng(0)
    w, g, m = (rng.uniform(-1, 1, (4,)).astype("float32") for _ in range(3))
    ref_w, ref_m = nd.array(w), nd.array(m)
    ref = nd.sgd_mom_update(ref_w, nd.array(g), ref_m, lr=0.1, momentum=0.9, wd=0.01)
    w16, w32, m2 = nd.array(w).astype("float16"), nd.array(w), nd.array(m)
    out = nd.mp_sgd_mom_update(w16, nd.array(g).astype("float16"), m2, w32, lr=0.1,
                               momentum=0.9, wd=0.01, out=w16)
    assert out.dtype == onp.float16
    assert_close(w32, ref, rtol=1e-3, atol=1e-3)
    weights = [nd.array(w), nd.array(w * 2)]
    moms = [nd.array(m), nd.array(m)]
    nd.multi_sgd_mom_update(weights[0], nd.array(g), moms[0], weights[1], nd.array(g), moms[1],
                            lrs=(0.1, 0.2), wds=(0.01, 0.0), momentum=0.9, num_weights=2,
                            out=weights)
    assert_close(weights[0], ref)
    second = nd.sgd_mom_update(nd.array(w * 2), nd.array(g), nd.array(m), lr=0.2, momentum=0.9)
    assert_close(weights[1], second)


def test_adamw_skips_a_non_finite_scale():
    w = nd.array([1.0, 2.0])
    mean, var = nd.zeros(2), nd.zeros(2)
    nd.contrib.adamw_update(w, nd.array([1.0, 1.0]), mean, var, nd.array([onp.inf]), lr=0.1,
                            eta=1.0, out=w)
    assert w.asnumpy().tolist() == [1.0, 2.0]
    nd.contrib.adamw_update(w, nd.array([1.0, 1.0]), mean, var, nd.array([1.0]), lr=0.1,
                            eta=1.0, wd=0.1, out=w)
    expected = onp.array([1.0, 2.0]) - (0.1 * 0.1 / (onp.sqrt(0.001) + 1e-8) + 0.1 *
                                        onp.array([1.0, 2.0]))
    assert_close(w, expected, rtol=1e-5)
