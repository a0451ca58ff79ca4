"""MkDocs hook: expands the API reference's markers into the reference of each namespace.

    <!-- api: kiln.np -->            every public name of kiln.np (tools/api_names.py)
    <!-- api-table: mxnet-ops -->    the table of MXNet operator names (kiln/mx/ops)

A name that griffe (mkdocstrings' loader) finds by reading the source becomes a
mkdocstrings directive (`::: kiln.np.sum`): its signature and docstring, and for a class
its documented members. A name made at run time (the NumPy functions kiln runs eagerly,
`nd`'s names served on first use, aliases such as `np.alltrue`) is rendered here from the
live object, with its signature and docstring, in the same place. So every public name is
on the page, and one without a docstring shows as such (tests/test_docs.py fails on it).
"""
import html
import importlib
import importlib.util
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKER = re.compile(r"<!--\s*api:\s*([\w.]+)\s*-->")
TABLE = re.compile(r"<!--\s*api-table:\s*mxnet-ops\s*-->")

_state = {}


def _api_names():
    spec = importlib.util.spec_from_file_location("kiln_api_names",
                                                  os.path.join(ROOT, "tools", "api_names.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_config(config):
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    import griffe
    import kiln  # noqa: F401  (installs kiln's public module paths: kiln.nd, kiln.autograd, ...)
    _state["names"] = _api_names()
    _state["griffe"] = griffe.load("kiln", search_paths=[ROOT], resolve_aliases=True,
                                   resolve_external=False)
    return config


def _static_path(real_module, name):
    """The dotted path griffe knows `real_module.name` by, or None if it does not."""
    path = f"{real_module}.{name}"
    try:
        obj = _state["griffe"][path[len("kiln."):]]
        target = obj.final_target if obj.is_alias else obj
    except Exception:       # griffe raises several kinds for names it cannot resolve
        return None
    if target.is_module or target.is_attribute:
        return None          # attributes (aliases like `alltrue = all`) are rendered live
    if not target.docstring:
        return None          # a docstring set at run time (a factory's) is the live object's
    return path


def _first_paragraph(doc):
    return inspect.cleandoc(doc or "").split("\n\n")[0].strip()


def _signature(obj, name):
    try:
        return f"{name}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        return f"{name}(...)"


def _live_entry(anchor, name, obj):
    doc = inspect.getdoc(obj) or ""
    kind = "class" if inspect.isclass(obj) else "function"
    return (f"### `{name}` {{ #{anchor} data-toc-label=\"{name}\" }}\n\n"
            f"```python\n{kind} {_signature(obj, name)}\n```\n\n{doc}\n")


def _constants_table(module, names):
    rows = ["| constant | value |", "| --- | --- |"]
    for name in names:
        value = getattr(module, name)
        text = value.__name__ if isinstance(value, type) else repr(value)
        rows.append(f"| `{name}` | `{html.escape(text)}` |")
    return "\n".join(rows) + "\n"


def namespace_reference(namespace):
    """The markdown of one namespace's reference: a heading, its summary, its names."""
    names_tool = _state["names"]
    module = importlib.import_module(namespace)
    real = module.__name__
    out = [f"## `{namespace}` {{ #{namespace} }}\n"]
    summary = _first_paragraph(module.__doc__)
    if summary:
        out.append(summary + "\n")
    names = names_tool.public_names(namespace)
    constants = [n for n in names if not names_tool.needs_docstring(getattr(module, n))]
    if constants:
        out.append(_constants_table(module, constants))
    for name in names:
        if name in constants:
            continue
        obj = getattr(module, name)
        path = _static_path(real, name)
        if path is not None:
            out.append(f"::: {path}\n    options:\n      heading: \"{name}\"\n"
                       f"      toc_label: \"{name}\"\n")
        else:
            out.append(_live_entry(f"{namespace}.{name}", name, obj))
    return "\n".join(out)


def mxnet_ops_table():
    """The MXNet operator names kiln maps, their inputs and the kiln function behind each."""
    from kiln.mx.ops import OPS
    rows = ["| MXNet operator | inputs | computed by |", "| --- | --- | --- |"]
    for name in sorted((n for n in OPS if not n.startswith("_")), key=str.lower):
        op = OPS[name]
        inputs = "any number" if op.variadic else ", ".join(op.inputs + op.aux)
        fn = f"{op.fn.__module__}.{op.fn.__qualname__}"
        rows.append(f"| `{name}` | {inputs} | `{fn}` |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown, page, config, files):
    if "<!--" not in markdown:
        return markdown
    markdown = MARKER.sub(lambda m: namespace_reference(m.group(1)), markdown)
    return TABLE.sub(lambda m: mxnet_ops_table(), markdown)
