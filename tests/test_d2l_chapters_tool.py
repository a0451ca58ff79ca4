"""tools/d2l_chapters.py: which cells of a chapter source run, and the prelude's epoch cap;
tools/d2l_stand_ins.py: the stand-in data it writes.

The chapters here are made up for the test (the book's sources are not part of kiln)."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools"))
import d2l_chapters as tool  # noqa: E402
import d2l_stand_ins as stand_ins  # noqa: E402

CHAPTER = '''Some prose.

```{.python .input}
%load_ext d2lbook.tab
tab.interact_select(['mxnet', 'pytorch'])
```

```{.python .input  n=1}
%%tab mxnet
%matplotlib inline
a = 1
```

```{.python .input}
%%tab pytorch
a = 2
```

```{.python .input}
%%tab pytorch, mxnet
b = a + 1
```

```{.python .input}
#@tab all
c = b * 10
```

```{.python .input}
d = c + 1
```

```python
not_run = True
```
'''


def test_cells_for_mxnet_keep_the_mxnet_tab_in_order_without_magics():
    cells = [c.strip() for c in tool.cells_for_mxnet(CHAPTER)]
    assert [c for c in cells if c] == ["a = 1", "b = a + 1", "c = b * 10", "d = c + 1"]


@pytest.mark.parametrize("cell, shown", [
    ("x = 1\nx, x + 1", True),          # a bare tuple is one value
    ("f(x);", False),                    # a trailing ; shows nothing
    ("x = 1", False),
    ("for i in range(2):\n    pass", False),
])
def test_the_last_expression_is_shown_as_a_notebook_does(cell, shown):
    out = tool.show_last_expression(cell)
    assert ("_show((" in out) == shown
    compile(out, "<cell>", "exec")


def test_prelude_caps_the_epochs_of_d2l_trainer(tmp_path):
    pytest.importorskip("d2l")
    pytest.importorskip("matplotlib")
    chapter = CHAPTER + '''
```{.python .input}
%%tab mxnet
from d2l import mxnet as d2l
trainer = d2l.Trainer(max_epochs=10)
assert trainer.max_epochs == 2, trainer.max_epochs
assert tab.selected('mxnet') and not tab.selected('pytorch')
print('ran', d)
```
'''
    script = tmp_path / "section.py"
    script.write_text(tool.build_script(chapter, cap=2))
    env = dict(os.environ, PYTHONPATH=tool.REPO, MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-m", "kiln", "mxnet", str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ran 21" in done.stdout   # a=1, b=2, c=20: the pytorch cell did not run


def test_only_matches_the_section_part_unless_the_chapter_is_named():
    name = "chapter_appendix-mathematics-for-deep-learning.naive-bayes"
    assert not tool.selected(name, "nin")            # 'learning' is in the chapter's name
    assert tool.selected(name, "bayes")
    assert tool.selected(name, "chapter_appendix")
    assert tool.selected("chapter_convolutional-modern.nin", "nin")
    assert not tool.selected("chapter_linear-regression.linear-regression-concise",
                             "chapter_linear-regression.linear-regression.")


def _scratch(tmp_path):
    for sub in ("scripts", "logs", "work", "mxnet"):
        (tmp_path / sub).mkdir()
    return str(tmp_path)


def test_framework_mxnet_runs_the_given_python_without_the_alias(tmp_path):
    scratch = _scratch(tmp_path)
    wrapper = tmp_path / "python-wrapper"
    marker = tmp_path / "wrapper-ran"
    wrapper.write_text(f"#!/bin/sh\ntouch {marker}\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    probe = ("import os, sys\n"
             "assert 'kiln' not in sys.modules, 'kiln was imported'\n"
             "assert os.environ['MXNET_HOME'].endswith('mxnet')\n"
             "print('argv0', sys.argv[0])\n")
    status, _, _, error, _ = tool.run_section("probe", probe, scratch, 60,
                                           python=str(wrapper), framework="mxnet")
    assert status == "pass", error
    assert marker.exists()   # the interpreter given, not this one, ran the section
    log = (tmp_path / "logs" / "probe.txt").read_text()
    assert "argv0 " + os.path.join(scratch, "scripts", "probe.py") in log


def test_framework_kiln_runs_through_the_alias(tmp_path):
    scratch = _scratch(tmp_path)
    probe = "import sys\nfrom mxnet import np\nassert np is sys.modules['kiln.np'], np\n"
    status, _, _, error, _ = tool.run_section("probe", probe, scratch, 120)
    assert status == "pass", error


def test_an_unknown_framework_is_refused():
    with pytest.raises(ValueError, match="'kiln' or 'mxnet'.*'torch'"):
        tool.section_command("x.py", sys.executable, "torch")


def test_the_command_line_passes_python_and_framework_to_each_section(tmp_path, monkeypatch):
    chapters = tmp_path / "md" / "chapter_x"
    chapters.mkdir(parents=True)
    (chapters / "one.md").write_text(CHAPTER)
    seen = []
    written = []
    monkeypatch.setattr(tool, "write_stand_in_data", lambda scratch, images: written.append(images))
    monkeypatch.setattr(tool, "run_section", lambda name, script, scratch, timeout, python,
                        framework: seen.append((name, python, framework))
                        or ("pass", 1, 1, "", (None, None)))
    tool.main([str(tmp_path / "md"), "--out", str(tmp_path / "out"),
               "--python", "/opt/mx/bin/python", "--framework", "mxnet"])
    assert seen == [("chapter_x.one", "/opt/mx/bin/python", "mxnet")]
    assert "on mxnet (/opt/mx/bin/python)" in (tmp_path / "out" / "results.md").read_text()
    assert written == [(60000, 10000)]
    tool.main([str(tmp_path / "md"), "--out", str(tmp_path / "out"), "--images", "1000,250"])
    assert written[-1] == (1000, 250)
    with pytest.raises(SystemExit):
        tool.main([str(tmp_path / "md"), "--out", str(tmp_path / "out"), "--images", "1000"])


def test_smaller_stand_ins_replace_the_ones_written_before(tmp_path, monkeypatch):
    import gzip
    for writer in ("_write_bananas", "_write_time_machine", "_write_fra_eng",
                   "_write_banana_photo"):
        monkeypatch.setattr(stand_ins, writer, lambda folder: None)
    for n in (60, 20):
        stand_ins.write_stand_in_data(str(tmp_path), (n, 10))
        path = tmp_path / "mxnet" / "datasets" / "fashion-mnist" / "train-labels-idx1-ubyte.gz"
        with gzip.open(path) as f:
            assert len(f.read()) == 8 + n      # the IDX header, then one byte per label


def test_the_prelude_prints_step_times_and_peak_memory_that_the_table_reads(tmp_path):
    """--smoke times the training steps after the first; the row takes the median and
    the peak RSS from what the section printed at exit."""
    scratch = _scratch(tmp_path)
    prelude = tool.PRELUDE.split("_report_peak_memory()\n_cap_epochs")[0]
    probe = prelude + (
        "import types\n"
        "_steps = []\n"
        "import atexit\n"
        "print('SMOKE-STEPS 4 median wall 0.500 s, process CPU 0.250 s per training step')\n"
        "_report_peak_memory()\n")
    status, _, _, error, (step, rss) = tool.run_section("probe", probe, scratch, 60,
                                                        python=sys.executable,
                                                        framework="mxnet")
    assert status == "pass", error
    assert step == 0.25
    assert rss is not None and rss > 0
    assert tool.printed_measures("killed\n") == (None, None)


def test_the_banana_stand_in_is_the_books_zip_layout(tmp_path):
    import io
    import zipfile
    from PIL import Image
    stand_ins._write_bananas(str(tmp_path), (("bananas_train", 3), ("bananas_val", 2)))
    stand_ins._write_banana_photo(str(tmp_path / "img"))
    assert Image.open(tmp_path / "img" / "banana.jpg").size == (256, 256)
    with zipfile.ZipFile(tmp_path / "banana-detection.zip") as z:
        for part, count in (("bananas_train", 3), ("bananas_val", 2)):
            rows = z.read(f"banana-detection/{part}/label.csv").decode().split()
            assert rows[0] == "img_name,label,xmin,ymin,xmax,ymax" and len(rows) == 1 + count
            for row in rows[1:]:
                name, label, *box = row.split(",")
                image = Image.open(io.BytesIO(z.read(f"banana-detection/{part}/images/{name}")))
                assert image.size == (256, 256) and label == "0"
                x0, y0, x1, y1 = map(int, box)
                assert 0 <= x0 < x1 <= 256 and 0 <= y0 < y1 <= 256
                assert image.getpixel((x0, y0)) == (230, 200, 40)    # the banana's box


def test_the_text_stand_ins_read_as_the_book_reads_them(tmp_path):
    import zipfile
    stand_ins._write_time_machine(str(tmp_path))
    stand_ins._write_fra_eng(str(tmp_path), pairs=50)
    words = (tmp_path / "timemachine.txt").read_text().split()
    assert 31000 < len(words) < 33000
    with zipfile.ZipFile(tmp_path / "fra-eng.zip") as z:
        lines = z.read("fra-eng/fra.txt").decode("utf-8").split("\n")
    pairs = [line.split("\t") for line in lines if line]
    assert len(pairs) == 50 and all(len(p) == 2 and p[0] and p[1] for p in pairs)
    assert all(p[0][-1] in ".!?" and p[1][-2] == "\u202f" for p in pairs)


def test_a_chapters_own_epoch_count_is_capped():
    cell = ("lr = 0.2\nnum_epochs, timer = 20, d2l.Timer()\nnum_epochs = 30  # again\n"
            "def f(num_epochs=40):\n    num_epochs = 50\n")
    got = tool.cap_epoch_assignments(cell, 2)
    assert got == ("lr = 0.2\nnum_epochs, timer = min(20, 2), d2l.Timer()\n"
                   "num_epochs = min(30, 2)  # again\ndef f(num_epochs=40):\n"
                   "    num_epochs = 50\n".rstrip("\n"))
    namespace = {"d2l": type("d2l", (), {"Timer": staticmethod(lambda: None)})}
    exec(got, namespace)
    assert namespace["num_epochs"] == 2
    assert tool.cap_epoch_assignments("x = (", 2) == "x = ("     # left for the run to report
