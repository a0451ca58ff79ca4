"""kiln.programs(block_or_function): the compiled programs a hybridized object holds, the
sizes each serves (which dimensions are symbolic) and why each was made (the guards that
specialized it, or why a build could not keep sizes symbolic)."""
from .._core.symdim import has_symbolic
from .cached import HybridFunction


class ProgramInfo:
    def __init__(self, entry, signatures):
        self.entry = entry
        self.signatures = signatures          # the concrete input shapes it served
        # an eager fallback (fallback.EagerEntry) has no program and no symbolic sizes
        self.symbolic = None if entry.eager else entry.symbolic   # dynamic.SymbolicInputs
        self.program = None if entry.eager else entry.program
        self.backend = "eager" if entry.eager else getattr(self.program, "backend", "?")

    @property
    def symbolic_dims(self):
        """{(input, axis): symbol} of the sizes this program serves at any value (a symbol
        the trace pinned to one value is left out)."""
        if self.symbolic is None:
            return {}
        pinned = self.symbolic.env.specialized()
        return {at: name for at, name in self.symbolic.positions.items() if name not in pinned}

    def __str__(self):
        graph = getattr(self.program, "graph", None)
        inputs = ", ".join(str(list(n.shape)) for n in graph.inputs) if graph else "?"
        head = (f"program on {self.backend} for inputs ({inputs}), served "
                f"{len(self.signatures)} signature(s)")
        if self.entry.eager:
            return head + " (runs eagerly: " + "; ".join(map(str, self.entry.breaks)) + ")"
        if self.symbolic is None:
            return head + " (specialized)"
        body = self.symbolic.describe().replace("\n", "\n    ")
        return f"{head}\n    {body}"


class Programs:
    def __init__(self, name, infos, refused, mode):
        self.name = name
        self.programs = infos
        self.refused = refused     # {signature: why a symbolic build fell back}
        self.mode = mode           # the shape policy: auto | dynamic | static

    def __len__(self):
        return len(self.programs)

    @property
    def symbolic(self):
        return [p for p in self.programs if p.symbolic is not None
                and any(has_symbolic(n.shape) for n in p.entry.program.graph.inputs)]

    def __str__(self):
        lines = [f"{self.name}: {len(self.programs)} program(s), shape policy {self.mode}"]
        lines += [f"  {k}. {p}" for k, p in enumerate(self.programs, 1)]
        lines += [f"  specialized because: {why}" for why in self.refused.values()]
        return "\n".join(lines)

    __repr__ = __str__


def programs(obj):
    """What hybridize compiled for `obj` (a hybridized block, or kiln.hybridize's result)."""
    cached = obj._cached if isinstance(obj, HybridFunction) else obj.__dict__.get("_kiln_cached")
    name = type(obj).__name__ if cached is None else cached.name
    if cached is None:
        return Programs(name, [], {}, "auto")
    served = {}
    for key, entry in list(cached.entries.items()):
        served.setdefault(id(entry), (entry, []))[1].append([s for s, _ in key[1]])
    infos = [ProgramInfo(entry, sigs) for entry, sigs in served.values()]
    return Programs(name, infos, dict(cached.policy.refused), cached.policy.mode)
