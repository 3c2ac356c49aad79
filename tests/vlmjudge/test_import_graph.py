"""The import graph of the packages and of bench/ and metrics/, drawn from their source: no
circles, imports flowing from bench/ and metrics/ to the method packages to the core only, and no
private module reached from outside its folder.

Every import counts, function-level ones included: a lazy import still ties two modules together
for a reader and for a refactoring.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("vlmjudge", "terravis", "viescore2", "fager", "regeneration", "t2ibaselines")
METHODS = PACKAGES[1:]
#: Folders over the packages (benchmarks, evaluate modules): they import methods and the core; nothing imports them.
TOOLS = ("bench", "metrics")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES + TOOLS for p in sorted((REPO / package).rglob("*.py"))}


def _imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `name` imports; `from a import b` counts `a.b` where that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imported(name, path, known) for name, path in known.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_walker_sees_the_packages():
    graph = _graph()
    assert len(graph) > 150 and "vlmjudge.judge" in graph["terravis.core"]
    assert "bench.terravis_setup" in graph["bench.terravis_paths"] and "terravis" in graph["metrics.terravis.terravis"]


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    cycles = _cycles(_graph())
    assert not cycles, "import circles (break each, e.g. by moving what both sides need into its own module):\n" + \
        "\n".join(" <-> ".join(c) for c in cycles)


def _wrong_flows(graph: dict[str, set[str]]) -> list[str]:
    """Imports against the flow tools -> methods -> core: the core imports no method, no method
    another, nothing imports a tool or one tool another, and an evaluate module
    (metrics/<method>/) imports its own method and the core only."""
    wrong = []
    for name, targets in graph.items():
        top = name.split(".")[0]
        for target in targets:
            other = target.split(".")[0]
            if other == top and top != "metrics":
                continue
            allowed = other == "vlmjudge" and top != "vlmjudge"
            if top == "bench":
                allowed = allowed or other in METHODS
            elif top == "metrics":  # metrics.<method>.<module>: its own method only, no sibling
                allowed = allowed or name.split(".")[1:2] == [other]
            if not allowed:
                wrong.append(f"{name} -> {target}")
    return sorted(wrong)


def test_the_flow_check_finds_planted_wrong_imports():
    planted = {"vlmjudge.judge": {"terravis.core", "bench.ideal"}, "terravis.core": {"vlmjudge.judge", "fager.core"},
               "bench.terravis": {"bench.ideal", "terravis.core", "vlmjudge.judge", "metrics.fager.fager"},
               "metrics.fager.fager": {"fager.spec", "vlmjudge.faces.module", "terravis.spec", "metrics.fager.app"},
               "fager.core": {"metrics.fager.fager"}}
    assert _wrong_flows(planted) == ["bench.terravis -> metrics.fager.fager", "fager.core -> metrics.fager.fager",
                                     "metrics.fager.fager -> metrics.fager.app", "metrics.fager.fager -> terravis.spec",
                                     "terravis.core -> fager.core", "vlmjudge.judge -> bench.ideal",
                                     "vlmjudge.judge -> terravis.core"]


def test_imports_flow_from_the_tools_to_the_methods_to_the_core():
    wrong = _wrong_flows(_graph())
    assert not wrong, "bench/ and metrics/ -> methods -> core, never back nor across:\n" + "\n".join(wrong)


def test_tools_reach_a_backend_only_through_its_package():
    """bench/ and metrics/ use the engine's public names (`vlmjudge.backends.hf.image_tokens`,
    `load_judge`), never a room inside a backend (`vlmjudge.backends.hf.batching`)."""
    wrong = sorted(f"{name} -> {target}" for name, targets in _graph().items() if name.split(".")[0] in TOOLS
                   for target in targets if target.startswith("vlmjudge.backends.") and target.count(".") > 2)
    assert not wrong, "export what a tool needs at the backend's package level:\n" + "\n".join(wrong)


def test_no_private_module_is_imported_from_outside_its_folder():
    wrong = []
    for name, targets in _graph().items():
        here = name.rpartition(".")[0] if not (REPO / name.replace(".", "/")).is_dir() else name
        for target in targets:
            folder, _, leaf = target.rpartition(".")
            if leaf.startswith("_") and not leaf.startswith("__") and folder != here:
                wrong.append(f"{name} -> {target}")
    assert not wrong, "an underscore module is private to its folder; give it a public name:\n" + "\n".join(sorted(wrong))


#: Core modules that moved before 0.1.0; none is kept as an alias (CHANGELOG, "Moved in the restructure").
OLD_CORE_MODULES = (
    "vlmjudge._moved", "vlmjudge._lazy", "vlmjudge._digests", "vlmjudge.metric_support",
    "vlmjudge._dist_accelerate", "vlmjudge._dist_cli", "vlmjudge._dist_common", "vlmjudge._dist_ddp",
    "vlmjudge._dist_evaluate", "vlmjudge._dist_ray", "vlmjudge._serve_batcher", "vlmjudge._serve_faults",
    "vlmjudge._serve_http", "vlmjudge._serve_parse", "vlmjudge.backends._openai_wire", "vlmjudge.backends.transformers",
    "vlmjudge.backends._hf_prefix", "vlmjudge.backends._hf_kvstore", "vlmjudge.cli_intake", "vlmjudge.cli_text",
    "vlmjudge.intake", "vlmjudge.report_page", "vlmjudge.report_figures", "vlmjudge.demo", "vlmjudge.spaces",
    "vlmjudge.evaluate_modules",
)


def test_no_moved_core_module_is_kept_under_its_old_name():
    kept = [name for name in OLD_CORE_MODULES if name in _modules()]
    assert not kept, f"moved modules kept under their old names: {kept}"
    importers = sorted(f"{name} -> {target}" for name, targets in _graph().items() for target in targets
                       if target in OLD_CORE_MODULES)
    assert not importers, importers
