"""tools/d2l_programs.py: a chapter run with its top-level blocks hybridized, and the count
of traces and programs it prints (the chapter here is made up for the test)."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools"))
import d2l_chapters  # noqa: E402
import d2l_programs as tool  # noqa: E402
import d2l_stand_ins as stand_ins  # noqa: E402

CHAPTER = '''
```{.python .input}
%%tab mxnet
from mxnet import np, npx, gluon
from mxnet.gluon import nn
npx.set_np()

class Model(nn.Block):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, flatten=False)
        self.initialize()
    def forward(self, X):
        return self.dense(X)

model = Model()
loss = gluon.loss.L2Loss()
for batch, steps in [(4, 5), (2, 5), (2, 7), (3, 1)]:
    y = model(np.ones((batch, steps, 6)))
    loss(y, np.zeros_like(y))
print('shape', y.shape)
```
'''


def test_the_top_level_blocks_are_hybridized_and_their_traces_counted(tmp_path):
    pytest.importorskip("d2l")
    script = tmp_path / "section.py"
    script.write_text(tool.script_with_hybridize(CHAPTER, cap=2, smoke=0, verbose=True))
    env = dict(os.environ, PYTHONPATH=d2l_chapters.REPO, MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-m", "kiln", "mxnet", str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "shape (3, 1, 3)" in done.stdout
    (found, reasons) = tool.counts(done.stdout)
    # the Dense: the first call specializes, the second makes every size symbolic and
    # serves the rest; the loss, made by the chapter, stays eager
    assert found == (2, 2, 1), done.stdout
    assert dict((why, int(n)) for n, why in reasons) == {
        "first call of this kind (structure, dtypes, ranks, mode, gradients)": 1,
        "sizes changed": 1}
    assert "D2L-BLOCK Model#0.dense (Dense): 2 trace(s), 2 program(s)" in done.stdout


def test_the_wikitext_stand_in_reads_as_the_book_reads_it(tmp_path):
    import zipfile
    stand_ins._write_wikitext(str(tmp_path), paragraphs=20)
    with zipfile.ZipFile(tmp_path / "wikitext-2-v1.zip") as z:
        lines = z.read("wikitext-2/wiki.train.tokens").decode("utf-8").splitlines()
    # d2l's _read_wiki keeps the lines of two sentences or more, split at ' . '
    paragraphs = [line.strip().lower().split(" . ") for line in lines
                  if len(line.split(" . ")) >= 2]
    assert len(paragraphs) == 20 and all(len(p) >= 2 for p in paragraphs)
