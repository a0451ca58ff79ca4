"""kiln's differential fuzzer (kiln/fuzz): a fixed-seed run in CI, and its parts.

`python -m kiln fuzz --minutes N` runs longer; every bug it finds becomes a regression test
in test_compiled_equals_eager.py.
"""
import numpy as onp
import pytest

from kiln import np
from kiln.fuzz.child import Child
from kiln.fuzz.compare import _within_eager_rounding, compare
from kiln.fuzz.generate import generate
from kiln.fuzz.minimize import minimize, split_body
from kiln.fuzz.run import fuzz

CI_SEED, CI_PROGRAMS = 20261123, 20
# seeds with the forms of issue 24 (products with zeros, 0-d operands into activations,
# variables that are the caller's array on some paths of an if/while) and of issue 27
# (attention written out, normalization over the last axis, loops over rows whose bodies
# merge), each with a few of every new form in its first programs (chosen again whenever
# a new form changes the stream)
NEW_SEEDS, NEW_PROGRAMS = (2404, 2407, 2410), 10
NEW_FORMS = ("product", "activation of a 0-d value", "if/while, then an in-place write",
             "attention", "normalization over the last axis", "loop over rows (foreach)")


def test_fixed_seed_budget_finds_nothing():
    lines = []
    report = fuzz(minutes=2.0, seed=CI_SEED, max_programs=CI_PROGRAMS, do_minimize=False,
                  out=lines.append, jobs=2)
    assert report.programs == CI_PROGRAMS
    assert (report.mismatches, report.crashes, report.hangs) == (0, 0, 0), "\n".join(lines)
    assert len(report.ops) >= 35      # a real spread of the registry, not a few ops


def test_bfloat16_stream_finds_nothing():
    """The stream with bfloat16 operands (`python -m kiln fuzz --bfloat16`); 400 programs
    of seed 0 ran clean when it was added (they found 4 gradient mismatches first)."""
    pytest.importorskip("ml_dtypes")
    lines = []
    report = fuzz(minutes=2.0, seed=CI_SEED, max_programs=CI_PROGRAMS, do_minimize=False,
                  out=lines.append, jobs=2, bfloat16=True)
    assert report.programs == CI_PROGRAMS
    assert (report.mismatches, report.crashes, report.hangs) == (0, 0, 0), "\n".join(lines)
    sources = [generate(CI_SEED, k, 15, True).source() for k in range(CI_PROGRAMS)]
    assert sum("'bfloat16'" in src for src in sources) >= CI_PROGRAMS // 4


@pytest.mark.parametrize("seed", NEW_SEEDS)
def test_new_seeds_with_the_new_forms_find_nothing(seed):
    """A fallback of kind 'path-aliasing' counts as a mismatch here (compare's 'strict'
    finding): hybridize(strict=True) must compile these programs."""
    lines = []
    report = fuzz(minutes=2.0, seed=seed, max_programs=NEW_PROGRAMS, do_minimize=False,
                  out=lines.append, jobs=2)
    assert report.programs == NEW_PROGRAMS
    assert (report.mismatches, report.crashes, report.hangs) == (0, 0, 0), "\n".join(lines)
    assert all(report.forms[form] > 0 for form in NEW_FORMS), report.forms


def test_generation_is_deterministic_and_runnable():
    a, b = generate(5, 5), generate(5, 5)
    assert a.source() == b.source()
    assert generate(5, 6).source() != a.source()
    namespace = {"__name__": "not_main"}
    exec(compile(a.source(), "<fuzz>", "exec"), namespace)    # noqa: S102
    namespace["f"](*namespace["ARGS"])


def test_child_reports_a_crash_and_recovers():
    child = Child(timeout=60)
    try:
        crash = "import ctypes\nctypes.string_at(0)\n" + generate(1, 0).source()
        status, source, result = child.run({"source": crash})
        assert status == "crash" and source == crash
        assert result["exit"] != 0
        status, _, result = child.run({"source": generate(1, 1).source()})
        assert status == "ok"
    finally:
        child.close()


def test_minimize_drops_what_the_failure_does_not_need():
    source = generate(7, 2).source()
    _, body, _ = split_body(source)
    keep = body[0][0].strip()

    def still_fails(candidate):
        return keep in candidate
    small = minimize(source, still_fails)
    _, small_body, _ = split_body(small)
    # the first statement, with the lines under it (an `if` keeps its block)
    assert [line.strip() for stmt in small_body for line in stmt] == [
        line.strip() for line in body[0]]


def test_conv_blocks_are_generated_and_the_ops_passes_make_are_counted():
    """The convolutional form reaches the channels-last and conv_bias passes, and coverage
    counts the ops of the optimized graph too (conv_bias exists only there)."""
    import kiln
    from kiln import init, np
    from kiln.fuzz.compare import compare, traced_ops
    from kiln.gluon import nn
    sources = [generate(41, i).source() for i in range(300)]
    assert any("nn.Conv2D" in src and "nn.MaxPool2D" in src for src in sources)
    blk = nn.HybridSequential()
    blk.add(nn.Conv2D(2, 3, padding=1, activation="relu", in_channels=1),
            nn.MaxPool2D(2, strides=1), nn.Conv2D(1, 2, in_channels=2))
    kiln.npx.random.seed(1)
    blk.initialize(init.Uniform(0.5))

    def f(a0):
        return blk(a0.reshape((1, 1) + a0.shape))
    x = np.array(onp.random.default_rng(0).uniform(-2, 2, (5, 6)).astype("float32"))
    assert not compare(f, [x], [x * -1], strict=True)
    compiled = kiln.hybridize(f, backend="c")
    compiled(x)
    seen = set()
    traced_ops(compiled, seen)
    assert {"conv", "pool"} <= seen
    from kiln.backend.dnnl.library import shim
    if shim() is not None:
        assert "conv_bias" in seen



def test_a_gradient_that_cancels_to_rounding_noise_is_judged_against_float64():
    """fuzz seed 731559, #1132: the input gradient of a LayerNorm's plain sum is 0; eager
    computes 1e-5 noise, the C program other noise. compare judges both against the
    float64 run and finds nothing."""
    from kiln import init, npx
    from kiln.gluon import nn
    blk = nn.LayerNorm(in_channels=4)
    npx.random.seed(1)
    blk.initialize(init.Uniform(0.5))

    def layer_norm_of_a_std(a0):
        return blk(np.std(a0, axis=-2))
    a0 = np.array([[[-0.25, 1.25, 1.0, -2.0], [-1.5, -0.25, -1.0, -1.75],
                     [0.25, -0.5, 1.0, -0.5]], [[-0.75, -1.25, 0.5, -1.75],
                    [1.5, 0.25, 2.0, -1.0], [-1.75, 1.75, -1.0, 1.0]]], dtype="float32")
    assert compare(layer_norm_of_a_std, [a0]) == []


def test_rounding_noise_excuses_no_nan_and_no_tie_taken_the_other_way():
    e = [onp.array([1e-5, 0.0], dtype="float32")]
    reference = [onp.array([0.0, 0.0])]
    assert _within_eager_rounding(e, [onp.array([-1e-5, 0.0], dtype="float32")], reference)
    assert not _within_eager_rounding(e, [onp.array([onp.nan, 0.0], dtype="float32")],
                                      reference)
    # eager's 0 where float64 gives 1 (a tie decided the other way) is no noise
    assert not _within_eager_rounding([onp.array([0.0], dtype="float32")],
                                      [onp.array([0.5], dtype="float32")], [onp.array([1.0])])
    assert not _within_eager_rounding(e, [onp.array([1e-5, 0.0], dtype="float32")], None)
