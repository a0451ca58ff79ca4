"""The layer contracts and the lint rules hold (both configured in pyproject.toml).

`lint-imports` checks ARCHITECTURE.md's floors: no module imports a floor above its own,
function-local imports included. `ruff check` runs pyflakes and pycodestyle over the
tree. Both come with the `dev` extra; a missing tool is a failure, not a skip, because CI
installs them.
"""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tool(name):
    path = shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)
    assert path, f"{name} is not installed: pip install -e '.[dev]'"
    return path


def test_no_module_imports_a_floor_above_its_own():
    done = subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_ruff_finds_nothing():
    done = subprocess.run([_tool("ruff"), "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
