"""Every ```python block of the README runs: in order, in one namespace, in a temp dir.

A block immediately preceded by `<!-- readme-test: skip (reason) -->` is left out. The
blocks run in a child process so their imports, aliases and working directory stay there.
"""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\b.*-->")


def python_blocks(text):
    """[(first line number, source)] of the ```python blocks not marked to skip."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            start = i + 1
            end = start
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise AssertionError(f"README.md:{i + 1}: ```python block is never closed")
            if not SKIP.search(prev):
                blocks.append((start + 1, "\n".join(lines[start:end])))
            i = end
        i += 1
    return blocks


def runner_source(blocks):
    """A script that runs each block with README line numbers in its tracebacks."""
    out = ["import sys", "ns = {'__name__': '__main__'}"]
    for line, src in blocks:
        padded = "\n" * (line - 1) + src + "\n"
        out.append(f"print('--- README.md:{line}', flush=True)")
        out.append(f"exec(compile({padded!r}, 'README.md', 'exec'), ns)")
    return "\n".join(out) + "\n"


def test_skip_marker_and_block_parsing():
    text = ("x\n```python\na = 1\n```\n<!-- readme-test: skip (needs a GPU) -->\n"
            "```python\nboom()\n```\n```bash\nls\n```\n```python\nb = a\n```\n")
    assert python_blocks(text) == [(3, "a = 1"), (13, "b = a")]


def test_readme_python_blocks_run(tmp_path):
    with open(os.path.join(ROOT, "README.md")) as f:
        blocks = python_blocks(f.read())
    assert blocks, "the README has no python blocks"
    script = tmp_path / "readme_blocks.py"
    script.write_text(runner_source(blocks))
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"a README block failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")


def bash_blocks(text):
    """The sources of the ```bash blocks, in order."""
    return re.findall(r"^```bash\n(.*?)\n```", text, flags=re.M | re.S)


def test_ci_runs_the_readme_commands():
    """The README starts with its two set-up commands (install + demo, then the test
    command), and .ci/run runs exactly the test command in a fresh environment."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    install, tests = bash_blocks(text)[:2]
    assert text.index(install) < text.index("## "), "the set-up commands come first"
    assert install.startswith("python -m pip install -e") and "kiln demo" in install
    assert tests.endswith("python -m pytest -q") and "docs" in tests, tests
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert ci[-1] == tests.strip()
