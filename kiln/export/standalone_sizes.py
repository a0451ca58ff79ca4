"""The run-time sizes of a standalone C program (build-c, standalone_c.py): model.c's
wrapper around the generated kiln_run, which fills the pointer table, sizes its buffers,
checks the sizes it is given and copies the outputs out.

A model exported with symbolic sizes keeps them: the generated kernels read each size
through KILN_SZ(k) from the table's sizes entry (backend/c/sizes.py). model.c has one
table, so every function here first writes the caller's sizes into it, then evaluates the
same expressions (element counts, buffer bytes, the model's guards). A buffer of run-time
size is allocated by the first call that needs it and grown by a larger one; a call
within the sizes seen allocates nothing. A model of fixed sizes gets the same functions
over an empty `sizes` array.
"""
from .._core.symdim import SymInt, concrete_value


def c_string(text):
    """A C string literal of `text` (printable ASCII kept, the rest as octal escapes)."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        out.append("\\" + ch if ch in '"\\' else ch if 32 <= byte < 127 and ch != "?"
                   else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


class Sizes:
    """The sizes of one generated program: `names` in the order of every `sizes` array
    (the model's symbols, sorted), the values exported, the guards a call must meet."""

    def __init__(self, gen, names, exported, guards):
        self.gen, self.names, self.exported = gen, list(names), dict(exported)
        self.guards = list(guards)

    def c(self, value):
        """C text of a size (an int, or a SymInt read from the table)."""
        if isinstance(value, SymInt):
            return f"(int64_t){self.gen.sizes.c(value.expr)}"
        return f"INT64_C({int(value)})"

    def at_export(self, value):
        return int(concrete_value(value, self.exported))

    def _condition(self, guard):
        """C that is true where `guard` holds; a division by a size holds nowhere it is 0
        (as Guard.holds)."""
        divisors = []

        def walk(expr):
            if expr[0] in ("//", "%") and expr[2][0] != "const":
                divisors.append(expr[2])
            if expr[0] not in ("sym", "const"):
                walk(expr[1])
                walk(expr[2])
        walk(guard.lhs)
        walk(guard.rhs)
        names = self.gen.sizes
        test = f"({names.c(guard.lhs)} {guard.op} {names.c(guard.rhs)})"
        test = test if guard.outcome else f"!{test}"
        return " && ".join([f"({names.c(d)} != 0)" for d in divisors] + [test])

    # ---- the wrapper's C ---------------------------------------------------------------
    def declarations(self):
        """The exported tables and the functions that take sizes (before kiln_model_run)."""
        graph_order = self.gen.sizes.order if self.gen.sizes is not None else []
        sizes_slot = next((k for k, s in enumerate(self.gen.slots) if s[0] == "sizes"), None)
        conditions = ["every size >= 0"] + [repr(g).split("  [")[0] for g in self.guards]
        lines = [
            "const char *const kiln_model_size_names[] = "
            f"{{{', '.join(c_string(n) for n in self.names) or '0'}}};",
            "const long long kiln_model_exported_sizes[] = "
            f"{{{', '.join(str(self.exported[n]) for n in self.names) or '0'}}};",
            "const char *const kiln_model_conditions[] = "
            f"{{{', '.join(c_string(t) for t in conditions)}}};",
            f"static int64_t kiln_model_size_values[{max(len(graph_order), 1)}];", "",
            "/* the caller's sizes into the table, where KILN_SZ reads them */",
            "static void kiln_model_use_sizes(const long long *sizes) {",
            "  (void)sizes;"]
        lines += [f"  kiln_model_size_values[{j}] = sizes[{self.names.index(n)}];"
                  for j, n in enumerate(graph_order)]
        if sizes_slot is not None:
            lines.append(f"  P[{sizes_slot}] = kiln_model_size_values;")
        lines += ["}", "", "int kiln_model_check_sizes(const long long *sizes) {"]
        lines += [f"  if (sizes[{j}] < 0) return 0;" for j in range(len(self.names))]
        lines.append("  kiln_model_use_sizes(sizes);")
        lines += [f"  if (!({self._condition(g)})) return {k + 1};"
                  for k, g in enumerate(self.guards)]
        lines += ["  return -1;", "}", ""]
        return lines

    def counts(self, kind, nodes):
        """kiln_model_<kind>_count(k, sizes) and the counts as exported."""
        exported = ", ".join(str(self.at_export(n.size)) for n in nodes) or "0"
        lines = [f"const long kiln_model_{kind}_sizes[] = {{{exported}}};",
                 f"long kiln_model_{kind}_count(int k, const long long *sizes) {{",
                 "  kiln_model_use_sizes(sizes);", "  switch (k) {"]
        lines += [f"  case {k}: return (long)({self.c(n.size)});" for k, n in enumerate(nodes)]
        return lines + ["  default: return -1;", "  }", "}", ""]

    def buffer(self, b, slot):
        """(declarations, C pointing P[slot] at buffer b) for a planned buffer."""
        need = self.gen.plan.capacities[b]
        name = f"kiln_buffer{b}"
        if not isinstance(need, SymInt):
            words = max(1, -(-int(need) // 8))
            return [f"static uint64_t {name}[{words}];"], [f"  P[{slot}] = (void *){name};"]
        return ([f"static void *{name};", f"static int64_t {name}_bytes;"], [
            "  {",
            f"    int64_t need = {self.c(need)};",
            f"    if (need > {name}_bytes) {{     /* grown for larger sizes, then kept */",
            f"      free({name});",
            f"      {name} = aligned_alloc(64, (size_t)((need + 63) / 64 * 64));",
            f"      {name}_bytes = {name} ? need : 0;",
            f"      if (!{name}) return -2;",
            "    }",
            f"    P[{slot}] = {name};",
            "  }"])

    def copy_out(self, k, node, slot):
        return [f"  {{ int64_t n = {self.c(node.size)}; "
                f"if (n > 0) memcpy(outputs[{k}], P[{slot}], (size_t)n * 4); }}"]
