"""`python -m kiln demo` and the command dispatcher."""
import os
import re
import subprocess
import sys

import pytest

from kiln import cli, demo

pytest.importorskip("sklearn")  # the demo's data set is read from scikit-learn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _accuracy(text):
    return float(re.search(r"test accuracy ([\d.]+)%", text).group(1)) / 100


def test_demo_reaches_95_percent(capsys):
    assert demo.main(["--quiet"]) == 0
    out = capsys.readouterr().out
    accuracies = [float(a) / 100 for a in re.findall(r"(?:MLP|CNN) test accuracy ([\d.]+)%", out)]
    assert len(accuracies) == 2 and min(accuracies) >= 0.95
    assert len(re.findall(r"^epoch +\d+ +loss", out, re.M)) == 25 + 12
    assert re.search(r"compiled [\d.]+ ms \(([\d.]+)x faster\)", out)
    assert "reloaded without its class" in out and "identical outputs" in out
    if "standalone C: skipped" not in out:
        assert re.search(r"standalone C program .*same outputs", out)


def test_demo_is_deterministic_and_workers_change_nothing(capsys):
    runs = []
    for workers in (0, 0, 2):
        assert demo.main(["--quiet", "--epochs", "3", "--cnn-epochs", "0", "--no-export",
                          "--num-workers", str(workers)]) in (0, 1)
        out = capsys.readouterr().out
        runs.append(re.findall(r"loss ([\d.]+)", out) + [_accuracy(out)])
    assert runs[0] == runs[1] == runs[2]


def test_module_entry_point_fails_below_the_required_accuracy():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "kiln", "demo", "--epochs", "1",
                           "--cnn-epochs", "0", "--no-export", "--lr", "1e-5"],
                          capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "FAILED" in proc.stderr and _accuracy(proc.stdout) < 0.95


def test_dispatcher_lists_commands_and_rejects_unknown(capsys):
    assert cli.main([]) == 0
    assert "demo" in capsys.readouterr().out
    assert cli.main(["no-such-command"]) == 2
    assert "unknown command" in capsys.readouterr().err
    for name, (module, function, help_) in cli.COMMANDS.items():
        assert help_ and module.startswith("kiln.")


def test_progress_fallback_prints_one_summary_line():
    import io
    from kiln.utils.progress import SimpleProgress
    stream = io.StringIO()
    bar = SimpleProgress(range(5), desc="epoch 1", stream=stream)
    assert sum(bar) == 10
    bar.set_postfix(loss=0.5)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and "epoch 1" in lines[0] and "5/5" in lines[0]
