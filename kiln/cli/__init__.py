"""`python -m kiln COMMAND ...` (also the `kiln` script): a table of subcommands.

To add a command, add one row to COMMANDS: name -> (module, function, one-line help).  The
function takes the remaining argv (a list of str) and returns an exit code; the module is
imported only when its command runs, so one broken command cannot break the others.
"""
import importlib
import sys

from .._core.base import command_line_entry

COMMANDS = {
    "demo": ("kiln.demo", "main", "train an MLP on the bundled 8x8 digits and report accuracy"),
    "bench": ("kiln.cli.bench", "main",
              "benchmarks from bench/: `bench` (seed MLP vs peers), `bench train`"),
    "inspect": ("kiln.cli.models", "inspect_main",
                "describe an exported model (PATH-symbol.json): inputs, outputs, ops, params"),
    "run": ("kiln.cli.models", "run_main", "run an exported model on .npy inputs"),
    "draw": ("kiln.cli.models", "draw_main", "draw an exported graph (.dot, or .svg via dot)"),
    "build-c": ("kiln.cli.models", "build_c_main",
                "write a standalone C program (model.c, Makefile) for an exported model"),
    "onnx": ("kiln.cli.models", "onnx_main", "convert an exported model to ONNX"),
    "fuzz": ("kiln.fuzz.run", "main",
             "differential fuzzing: random programs, eager vs both backends (--minutes N)"),
    "mxnet": ("kiln.mx.alias", "main", "run a script written for MXNet with `mxnet` = kiln"),
}


def usage():
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: python -m kiln COMMAND [options]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, _, help_) in COMMANDS.items()]
    lines += ["", "Run `python -m kiln COMMAND --help` for a command's options."]
    return "\n".join(lines)


@command_line_entry
def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if argv[0] in ("-V", "--version"):
        from .._version import __version__
        print(f"kiln {__version__}")
        return 0
    entry = COMMANDS.get(argv[0])
    if entry is None:
        print(f"kiln: unknown command {argv[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module, function, _ = entry
    return int(getattr(importlib.import_module(module), function)(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
