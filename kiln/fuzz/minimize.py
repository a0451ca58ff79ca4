"""Shrinking a failing program: drop statements (and returned names) while it still fails
the same way, so the reproducer printed is as short as the failure allows."""
import time


def split_body(source):
    """(head lines, statements, tail lines) of a program's source: a statement is a line at
    the body's indentation plus the deeper lines under it."""
    lines = source.split("\n")
    start = next(k for k, line in enumerate(lines) if line.startswith("def f(")) + 1
    end = next(k for k in range(start, len(lines)) if lines[k].startswith("    return"))
    statements = []
    for line in lines[start:end]:
        if line.startswith("     ") and statements:
            statements[-1].append(line)
        else:
            statements.append([line])
    return lines[:start], statements, lines[end:]


def join(head, statements, tail):
    return "\n".join(head + [line for stmt in statements for line in stmt] + tail)


def minimize(source, still_fails, max_seconds=120.0, max_tries=60):
    """The smallest variant of `source` found for which still_fails(candidate) holds."""
    deadline = time.time() + max_seconds
    head, body, tail = split_body(source)
    tries = 0

    def budget():
        return tries < max_tries and time.time() < deadline

    changed = True
    while changed and budget():
        changed = False
        for k in range(len(body) - 1, -1, -1):
            if not budget():
                break
            candidate = body[:k] + body[k + 1:]
            tries += 1
            if still_fails(join(head, candidate, tail)):
                body, changed = candidate, True
    names = [n.strip() for n in tail[0].replace("    return", "", 1).split(",")]
    if len(names) > 1:
        for name in names:
            if not budget():
                break
            tries += 1
            one = [f"    return {name}"] + tail[1:]
            if still_fails(join(head, body, one)):
                tail = one
                break
    return join(head, body, tail)
