"""kiln's differential fuzzer: random programs run eagerly and hybridized on both backends
must agree (README, "Compiled equals eager").

  generate.py / forms.py  random programs over the np/npx namespaces and the registry
  alias_forms.py          the forms whose variables are their old arrays on some paths only
  compare.py              the eager-vs-compiled check (also used by regression tests)
  worker.py / child.py    programs run in a child process, so a crash is caught
  minimize.py             failing programs shrink to a short reproducer
  run.py                  the loop and `python -m kiln fuzz --minutes N [--seed S]`
"""
