"""Dead-code elimination: keep only what the outputs need."""
from ..._core.ir import Graph


def eliminate_dead_code(graph):
    g = Graph(graph.inputs, graph.params, graph.outputs, graph.name)
    live = {id(n) for n in g.nodes}
    # unused parameters leave the graph; inputs stay, they are the call signature
    g.params = [p for p in graph.params if id(p) in live]
    return g
