"""tools/mxnet_suite.py without MXNet's source: reading pytest's reports, comparing the
two sides per file and grouping kiln's misses by cause."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools"))
import mxnet_suite as tool  # noqa: E402

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="test_a" name="test_ok" time="0.1"/>
<testcase classname="test_a" name="test_bad" time="0.1">
  <failure message="AssertionError: 3 of 12 elements differ">trace</failure></testcase>
<testcase classname="test_a" name="test_skip" time="0.0">
  <skipped message="needs a GPU"/></testcase>
<testcase classname="" name="test_b" file="test_b.py" time="0.0">
  <error message="collection failure">ImportError: cannot import name 'py_str'</error>
</testcase></testsuite></testsuites>"""


def test_a_report_is_read_per_test_and_a_collection_error_per_file(tmp_path):
    path = tmp_path / "r.xml"
    path.write_text(REPORT)
    got = tool.read_junit(str(path))
    assert got["test_a.py::test_ok"] == ("passed", "")
    assert got["test_a.py::test_bad"] == ("failed", "AssertionError: 3 of 12 elements differ")
    assert got["test_a.py::test_skip"][0] == "skipped"
    assert got["test_b.py::<collection>"] == ("error", "collection failure")


def test_compare_counts_per_file_and_groups_misses_by_cause():
    reference = {"test_a.py::t1": ("passed", ""), "test_a.py::t2": ("passed", ""),
                 "test_a.py::t3": ("failed", "x"), "test_b.py::t1": ("passed", "")}
    kiln = {"test_a.py::t1": ("passed", ""), "test_a.py::t2": ("failed", "shape (2, 3) != (3, 2)"),
            "test_a.py::t3": ("passed", ""),
            "test_b.py::<collection>": ("error", "ImportError: no py_str")}
    table, causes = tool.compare(kiln, reference)
    assert table["test_a.py"] == {"mxnet": 2, "kiln": 2, "both": 1}
    assert table["test_b.py"] == {"mxnet": 1, "kiln": 0, "both": 0}
    # numbers are not the cause; a file that did not import blames all its tests on that
    assert causes["failed: shape (N, N) != (N, N)"] == 1
    assert causes["error: ImportError: no py_str"] == 1


def test_the_table_has_a_total_row():
    text = tool.markdown({"test_a.py": {"mxnet": 2, "kiln": 1, "both": 1},
                          "test_b.py": {"mxnet": 3, "kiln": 0, "both": 0}})
    assert text.splitlines()[-1] == "| **all** | 5 | 1 | 1 |"


def test_without_a_source_it_says_what_it_needs():
    res = subprocess.run([sys.executable, tool.__file__], capture_output=True, text=True)
    assert res.returncode == 2 and "--source" in res.stderr
