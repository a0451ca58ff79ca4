"""The floors of kiln import nothing above them. The primitive layer, kiln/ops, imports only
kiln._core and itself: what it needs from above (eager fast paths, the subgraph runner,
the MPI allreduce) is registered into it from there (ARCHITECTURE.md)."""
import ast
import pathlib

import kiln

KILN = pathlib.Path(kiln.__file__).parent


def _imported(path, package):
    """Every kiln module `path` imports, at module level or inside a function, absolute."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            yield target
            if not node.module:      # `from . import x`: x is a module of that package
                yield from (f"{target}.{alias.name}" for alias in node.names)


def test_ops_imports_only_the_core_and_itself():
    allowed = ("kiln._core", "kiln.ops")
    reaching_up = set()
    for path in sorted((KILN / "ops").rglob("*.py")):
        package = "kiln." + ".".join(path.relative_to(KILN).parent.parts)
        for target in _imported(path, package):
            if (target == "kiln" or target.startswith("kiln.")) and not any(
                    target == a or target.startswith(a + ".") for a in allowed):
                reaching_up.add(f"{path.relative_to(KILN.parent)} imports {target}")
    assert not reaching_up, "\n".join(sorted(reaching_up))
