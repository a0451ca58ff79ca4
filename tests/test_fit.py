"""kiln.fit compiles its own training step: the "side effects run only while tracing" note
(KilnTraceWarning) is for code users hybridize themselves, so neither fit nor
kiln.explain gives it or uses up its one showing (each MPI rank ran fit and printed it)."""
import os
import subprocess
import sys
import textwrap

from paths import ROOT

SCRIPT = textwrap.dedent("""
    import warnings
    warnings.simplefilter("always")
    caught = []
    warnings.showwarning = lambda m, c, *a, **k: caught.append(c.__name__)
    import kiln
    from kiln import np, gluon
    from kiln.gluon import nn
    x = np.random.normal(size=(64, 8))
    y = np.array((x.asnumpy()[:, 0] > 0).astype("float32"))
    data = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=16)
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu"), nn.Dense(2))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    kiln.fit(net, data, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, epochs=2, quiet=True,
             log=None)
    kiln.explain(net, x)
    print("fit", caught.count("KilnTraceWarning"))
    net.hybridize()                  # the user's own hybridize still gets the note, once
    net(x)
    net(np.ones((3, 8)))
    print("user", caught.count("KilnTraceWarning"))
""")


def test_fit_and_explain_give_no_trace_warning_and_leave_the_users_one():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["fit", "0", "user", "1"], res.stdout + res.stderr
