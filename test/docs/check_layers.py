#!/usr/bin/env python3
"""Checks that the sources respect the layers (docs/architecture.md) and stay short.

The build already refuses most includes against the layers: a folder's headers are on the include
path only of the targets that link it. This check is the rule itself, written once, so that a
link added in the wrong direction (or a header that only happens to compile) fails too:

    base <- ops <- core <- state <- elastic
    base <- rendezvous <- {core, elastic, launcher}
    launcher <- discovery <- elastic_job
    launcher <- {agent, static_job}
    {static_job, elastic_job, agent} <- cohortrun

The launcher's folders build on launcher/ (the parts every job shares); the two elastic modes,
elastic_job/ (the built-in rendezvous) and agent/ (a Store), never include each other, and only
cohortrun/ (the executable) includes the jobs.

A folder may include its own headers, the public ones (cohort/...) and those of the folders below
it. core may not include the rendezvous server (the launcher's part), torch may include base's
header-only mutex, and the public headers include only public headers. Tests, benchmarks and
examples may include what they link.

The layers have no cycle, and neither has the include graph of the project's own files, nor the
import graph of the Python package's modules (python/cohort).

Every source file of the project (C++, Python, shell, CMake) has at most 500 lines.

Usage: check_layers.py SOURCE_DIR. Exits 1 naming every violation.
"""
import ast
import pathlib
import re
import subprocess
import sys

BELOW = {
    "base": set(),
    "ops": {"base"},
    "rendezvous": {"base"},
    "core": {"base", "ops", "rendezvous"},
    "state": {"base", "ops", "core"},
    "elastic": {"base", "ops", "core", "state", "rendezvous"},
    "launcher": {"base", "rendezvous"},
    "discovery": {"base", "rendezvous", "launcher"},
    "elastic_policy": {"base", "rendezvous", "launcher", "discovery"},
    "elastic_job": {"base", "rendezvous", "launcher", "discovery", "elastic_policy"},
    "agent": {"base", "rendezvous", "launcher", "discovery", "elastic_policy"},
    "static_job": {"base", "rendezvous", "launcher"},
    "cohortrun": {"base", "rendezvous", "launcher", "discovery", "elastic_policy", "elastic_job",
                  "agent", "static_job"},
    "torch": set(),
    "python": set(),
}
FORBIDDEN = {"core": {"rendezvous/server.h"}}
# Headers a folder may include although their folder is not below it: the torch adapter, built on
# the public API, uses the header-only annotated mutex of base/ (docs/thread-safety.md).
ALLOWED = {"torch": {"base/mutex.h", "base/thread_annotations.h"}}
PROJECT_FOLDERS = set(BELOW) | {"test", "bench", "examples", "include"}
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^">]+)[">]', re.M)
SOURCE_SUFFIXES = {".h", ".cc", ".py", ".sh", ".cmake"}
MAX_LINES = 500



def cycles(graph, label):
    """Every cycle a depth-first walk of `graph` (node -> successors) meets, as "LABEL: a -> b -> a"."""
    problems, state = [], {}  # state: 1 while on the current path, 2 when done

    def visit(node, path):
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                problems.append(f"{label}: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return problems

def tracked_files(root):
    out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, text=True)
    if out.returncode != 0:  # not a checkout (a source package): walk the tree instead
        return [p.relative_to(root) for p in root.rglob("*") if p.is_file()]
    return [pathlib.Path(line) for line in out.stdout.splitlines()]


def layer_violations(root, files):
    problems = []
    for rel in files:
        if rel.suffix not in {".h", ".cc"}:
            continue
        folder = rel.parts[0]
        public = rel.parts[:2] == ("include", "cohort")
        if folder not in BELOW and not public:
            continue
        path = root / rel
        if not path.is_file():
            continue
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            public_target = (root / "include" / target).is_file()
            if public_target:
                continue
            if not (root / target).is_file():
                continue  # not the project's (<vector>, <torch/...>, a file of the same folder)
            top = target.split("/")[0]
            if public:
                if top in PROJECT_FOLDERS:
                    problems.append(f"{rel}: a public header includes '{target}'")
                continue
            if top not in PROJECT_FOLDERS or top in {folder, "cohort"}:
                continue
            if target in ALLOWED.get(folder, set()):
                continue
            if top not in BELOW[folder] or target in FORBIDDEN.get(folder, set()):
                problems.append(f"{rel}: {folder}/ may not include '{target}'")
    return problems


def folder_cycles():
    """The layers themselves: a folder that is below itself, through any chain, is a cycle."""
    problems = []
    for start in BELOW:
        seen, todo = set(), list(BELOW[start])
        while todo:
            folder = todo.pop()
            if folder == start:
                problems.append(f"check_layers.py: {start}/ is below itself")
                break
            if folder not in seen:
                seen.add(folder)
                todo.extend(BELOW.get(folder, set()))
    return problems


def include_cycles(root, files):
    """Cycles in the include graph of the project's own files (headers that include each other)."""
    graph = {}
    for rel in files:
        path = root / rel
        if rel.suffix not in {".h", ".cc"} or not path.is_file():
            continue
        targets = INCLUDE.findall(path.read_text(errors="replace"))
        graph[str(rel)] = [t for t in targets if (root / t).is_file()]
    return cycles(graph, "include cycle")


def python_modules(root, files):
    """The Python package's modules: their dotted names, and the files they are in."""
    modules = {}
    for rel in files:
        if rel.suffix != ".py" or rel.parts[:2] != ("python", "cohort"):
            continue
        parts = list(rel.with_suffix("").parts[1:])
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = root / rel
    return modules


def python_imports(module, path, modules):
    """The package's modules that a module imports (anywhere in it, functions included).

    `from a.b import c` imports a.b.c when that is a module, else a.b. A module's own packages are
    imported before it, so an import of one of them (`from cohort import _C`) is no edge.
    """
    found = set()
    for node in ast.walk(ast.parse(path.read_text(errors="replace"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package upwards
                package = module.split(".")
                if path.name != "__init__.py":
                    package.pop()
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                     for alias in node.names]
        for name in names:
            if name in modules and name != module and not module.startswith(name + "."):
                found.add(name)
    return found


def python_import_cycles(root, files):
    """Cycles in the import graph of the Python package: a module that imports one that imports
    it back, through any chain, runs against a partly initialized module."""
    modules = python_modules(root, files)
    graph = {m: sorted(python_imports(m, path, modules)) for m, path in modules.items()}
    return cycles(graph, "python import cycle")


def length_violations(root, files):
    problems = []
    for rel in files:
        if rel.suffix not in SOURCE_SUFFIXES and rel.name != "CMakeLists.txt":
            continue
        path = root / rel
        if not path.is_file():
            continue
        lines = path.read_text(errors="replace").count("\n")
        if lines > MAX_LINES:
            problems.append(f"{rel}: {lines} lines, more than {MAX_LINES}")
    return problems


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    files = tracked_files(root)
    problems = (folder_cycles() + layer_violations(root, files) + include_cycles(root, files) +
                python_import_cycles(root, files) + length_violations(root, files))
    for p in problems:
        print(p)
    checked = sum(1 for f in files if f.suffix in {".h", ".cc"})
    print(f"check_layers: {checked} C++ files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
