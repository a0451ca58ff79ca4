"""Draw the documentation's pictures of kiln's graphs into docs/images/ (committed SVGs).

    python tools/docs_pictures.py            # needs Graphviz's `dot` and matplotlib

- graph-traced.svg, graph-optimized.svg: a small hybridized model as traced and as the C
  backend runs it (Graph.to_dot(), with each elementwise fusion group drawn as a box);
- memory-plan.svg: the memory plan of a six-layer MLP on the NumPy executor (whose plan
  is per node; the C backend plans its fused loops the same way): when each value is
  alive and which buffer holds it.

Run it again after a change to the passes or the memory planner, and commit the result;
the pictures say which kiln drew them. The benchmark charts are tools/bench_charts.py's.
"""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGES = os.path.join(ROOT, "docs", "images")


def small_model():
    """The model of the graph pictures: Dense(16, relu) -> Dense(4), times one plus zero
    (both simplified away)."""
    from kiln import np
    from kiln.gluon import nn

    class Small(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Dense(16, activation="relu")
            self.out = nn.Dense(4)

        def forward(self, x):
            return self.out(self.hidden(x)) * 1 + 0     # the simplifier removes both

    np.random.seed(0)
    net = Small()
    net.initialize()
    net.hybridize(backend="c")
    return net, np.ones((8, 32))


def with_fusion_boxes(graph):
    """Graph.to_dot(), with each fusion group in a dashed box."""
    lines = graph.to_dot().split("\n")
    boxes = []
    for k, group in enumerate(graph.fusion_groups):
        members = " ".join(f"n{n.id};" for n in group)
        boxes.append(f'  subgraph cluster_fused{k} {{ label="one loop"; style=dashed; '
                     f'fontname="Helvetica"; {members} }}')
    return "\n".join(lines[:-1] + boxes + lines[-1:])


def render_dot(source, path):
    dot = shutil.which("dot")
    if dot is None:
        sys.exit("tools/docs_pictures.py needs Graphviz's `dot` (apt-get install graphviz)")
    subprocess.run([dot, "-Tsvg", "-o", path], input=source.encode(), check=True)


def graph_pictures():
    from kiln.graph.capture import capture
    from kiln.hybrid.cached import cached_function_of
    net, x = small_model()
    net(x)
    traced = capture(net, (x,), "traced").graph
    optimized = cached_function_of(net).graph(x)
    optimized.name = "optimized"
    render_dot(traced.to_dot(), os.path.join(IMAGES, "graph-traced.svg"))
    render_dot(with_fusion_boxes(optimized), os.path.join(IMAGES, "graph-optimized.svg"))
    return traced, optimized


def mlp_chain(layers=6, width=64, batch=8):
    from kiln import np
    from kiln.gluon import nn
    np.random.seed(0)
    net = nn.HybridSequential()
    for _ in range(layers):
        net.add(nn.Dense(width, activation="relu"))
    net.initialize()
    net.hybridize(backend="numpy")
    return net, np.ones((batch, width))


def live_ranges(graph):
    """[(buffer, first position, last position, op)] of the values the plan places."""
    plan = graph.memory_plan
    schedule = [n for n in graph.nodes if not n.is_source]
    position = {id(n): k for k, n in enumerate(schedule)}
    last = {}
    for n in schedule:
        for i in n.inputs:
            last[id(i)] = position[id(n)]
    end = len(schedule)
    for o in graph.outputs:
        last[id(o)] = end
    return [(plan.buffer_of[id(n)], position[id(n)], last.get(id(n), position[id(n)]), n.op)
            for n in schedule if id(n) in plan.buffer_of]


def memory_picture():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "kiln"})  # text, stable ids
    from kiln.hybrid.cached import cached_function_of
    net, x = mlp_chain()
    net(x)
    graph = cached_function_of(net).graph(x)
    ranges = live_ranges(graph)
    buffers = sorted({b for b, *_ in ranges})
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.55 * len(buffers)))
    colours = plt.get_cmap("tab10")
    for b, start, stop, op in ranges:
        ax.barh(b, max(stop - start, 0.6), left=start, height=0.6, color=colours(b % 10),
                edgecolor="black", linewidth=0.5)
        ax.text(start + 0.08, b, op, va="center", ha="left", fontsize=7)
    ax.set_yticks(buffers)
    ax.set_yticklabels([f"buffer {b}" for b in buffers])
    ax.invert_yaxis()
    ax.set_xlabel("position in the schedule (ops run left to right; a bar ends at the "
                  "value's last reader)")
    ax.set_title(f"Memory plan of a 6-layer MLP: {len(ranges)} values in "
                 f"{len(buffers)} buffers", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(IMAGES, "memory-plan.svg"), metadata={"Date": None})
    plt.close(fig)
    return graph, ranges, buffers


def main():
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    os.makedirs(IMAGES, exist_ok=True)
    traced, optimized = graph_pictures()
    print(f"graph-traced.svg: {traced.ops}")
    print(f"graph-optimized.svg: {optimized.ops}, fusion groups "
          f"{[[n.op for n in g] for g in optimized.fusion_groups]}")
    graph, ranges, buffers = memory_picture()
    print(f"memory-plan.svg: {len(ranges)} values in {len(buffers)} buffers ({graph.memory_plan})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
