"""The layers of docs/architecture.md, as the imports show them.

Every import in `mock_server/` counts: at the top of a module, inside a function, and
under `TYPE_CHECKING` (a circle of type names is still a circle a reader walks).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mock_server"
#: Below the HTTP layer: plain values in, plain values out, no I/O of their own.
CORE = (
    "mock_server.domain",
    "mock_server.clock",
    "mock_server.scheduler",
    "mock_server.errors",
    "mock_server.sourcefile",
)
#: What the core never imports.
ABOVE_CORE = (
    "aiohttp",
    "mock_server.edge",
    "mock_server.merchant",
    "mock_server.control",
    "mock_server.openapi",
    "mock_server.webhooks",
    "mock_server.state_file",
    "mock_server.app",
    "mock_server.serving",
    "mock_server.cli",
    "mock_server.config",
    "mock_server.testing",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Every module `path` imports: the package's own, resolved, and others by name."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:  # `from . import selection` names a module
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in modules else source)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_through_others():
    assert circles(import_graph()) == []


def test_the_core_imports_nothing_of_http_io_or_wiring():
    crossings = sorted(
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        if module.startswith(CORE)
        for target in targets
        if target.startswith(ABOVE_CORE)
    )
    assert crossings == []


#: The request edge's dispatcher: the one edge module that knows the APIs it dispatches to.
DISPATCHER = "mock_server.edge.server"
#: Who may import whom among the HTTP packages (docs/architecture.md, "Layers").
NEVER = {
    "mock_server.edge": ("mock_server.merchant", "mock_server.control", "mock_server.openapi"),
    "mock_server.merchant": ("mock_server.control", "mock_server.openapi"),
    "mock_server.control": ("mock_server.merchant",),
}


def test_the_edge_toolkit_and_the_two_apis_keep_to_their_packages():
    graph = import_graph()
    crossings = sorted(
        f"{module} imports {target}"
        for package, forbidden in NEVER.items()
        for module, targets in graph.items()
        if module.startswith(package) and module != DISPATCHER
        for target in targets
        if target.startswith(forbidden)
    )
    assert crossings == []
    assert "mock_server.merchant.table" in graph[DISPATCHER]


#: The recording package (docs/recording.md) drives a sandbox over HTTP and the control
#: API as any client would: it may start a server (`app.py`, `serving.py`, `config.py`),
#: use `conformance.py`'s shape comparison and `webhooks.verify`, never reach into a
#: sandbox nor into the code that serves the APIs.
RECORDING = "mock_server.recording"
RECORDING_NEVER = (
    "mock_server.domain.sandbox",
    "mock_server.domain.sandboxes",
    "mock_server.edge",
    "mock_server.merchant",
    "mock_server.control",
    "mock_server.openapi",
    "mock_server.state_file",
)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    """`module` is one of `packages` or inside one (`domain.sandbox_ids` is not
    `domain.sandbox`)."""
    return any(module == package or module.startswith(package + ".") for package in packages)


def test_the_recording_package_is_a_client_of_the_sandbox():
    graph = import_graph()
    crossings = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _within(module, (RECORDING,))
        for target in targets
        if _within(target, RECORDING_NEVER)
    )
    assert crossings == []
    assert "mock_server.serving" in graph["mock_server.recording.analysis.world"]  # it starts one


def test_the_recorder_stands_alone_and_the_analysis_reads_its_files():
    """recording/recorder/ (record, proxy, listener, upstream, http1, redaction, the
    file format) imports nothing of recording/analysis/ (reading, replay, compare,
    calibrate, ...): the recorder runs beside production without the tools that read
    what it writes, which reach it only through its file format and redaction rules."""
    graph = import_graph()
    recorder, analysis = f"{RECORDING}.recorder", f"{RECORDING}.analysis"
    crossings = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _within(module, (recorder,))
        for target in targets
        if _within(target, (analysis,))
    )
    assert crossings == []
    assert f"{recorder}.fileformat" in graph[f"{analysis}.reading"]


def test_the_check_sees_a_circle_and_a_crossing():
    """The two checks above would notice what they look for."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = import_graph()
    assert "mock_server.domain.scenarios" in graph["mock_server.domain.lifecycle"]
    assert "aiohttp" in graph["mock_server.webhooks"]
