"""hybridize's machinery above the backends: the cache of traced and compiled programs per
input signature (cached.py), the eager fallback when a trace breaks (fallback.py) and
kiln.explain (explain.py). It builds graphs with kiln.graph, optimizes them with its pass
pipelines and compiles them with kiln.backend, so it sits above both."""
