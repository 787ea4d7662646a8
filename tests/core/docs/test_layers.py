"""The house's layers, read from the code: no import circles, no arrow that runs back up, and
imports of the project's own modules at module top.

Every `.py` under `conformance/` and `implementations/` is parsed (imports inside functions
included), and each import of a project module is an arrow from its file to the file it names
(`from a.b import c` names `a/b/c.py` where that module exists, else `a/b/__init__.py`).
`LAYERS` is the one place the order of `conformance/`'s rooms is written down.
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.helpers import ROOT

PACKAGES = ("conformance", "implementations")

#: The rooms from the ground up; a room may import its own files and any room on a LOWER
#: floor, never one on its floor or above. A room is a top-level module or package of
#: `conformance/` (`implementations` is one room: the ports, under everything).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("implementations",),
    (
        "conformance/distribution",
        "conformance/jsonable",
        "conformance/colours",
        "conformance/outputs",
    ),
    ("conformance/checking",),
    ("conformance/mutants",),
    ("conformance/running",),
    ("conformance/terminal",),
    ("conformance/tables",),
    ("conformance/benchmark", "conformance/comparison", "conformance/merge"),
    ("conformance/versions",),
    ("conformance/page",),
    ("conformance/commands",),
    ("conformance/api", "conformance/cli", "conformance/pytest_plugin"),
    ("conformance/__main__", "conformance/__init__"),
)
FLOOR = {room: floor for floor, rooms in enumerate(LAYERS) for room in rooms}


@dataclass(frozen=True)
class Arrow:
    """`source` (a file) imports `target` (a file) at `line`, inside a function or not."""

    source: Path
    target: Path
    line: int
    in_function: bool


def _files() -> list[Path]:
    return sorted(p.relative_to(ROOT) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _modules(files: list[Path]) -> dict[str, Path]:
    """Each dotted module name and its file."""
    found = {}
    for path in files:
        parts = path.with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, path: Path) -> Iterator[str]:
    """The dotted names an import statement asks for (a from-import's names as submodules)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    module = node.module or ""
    if node.level:
        package = list(path.with_suffix("").parts[:-1])
        base = package[: len(package) - (node.level - 1)]
        module = ".".join([*base, *([module] if module else [])])
    yield module
    yield from (f"{module}.{alias.name}" for alias in node.names)


def _inside_function(tree: ast.Module) -> set[ast.AST]:
    """Every node that stands inside a function's body."""
    inside: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inside.update(ast.walk(node))
    return inside


@functools.cache
def arrows() -> tuple[Arrow, ...]:
    """Every import of a project module in the project's packages (read once per session)."""
    files = _files()
    modules = _modules(files)
    found = []
    for path in files:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        inside = _inside_function(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = list(_imported(node, path))
            if isinstance(node, ast.ImportFrom):  # the submodules named, else the module
                submodules = [n for n in names[1:] if n in modules]
                names = submodules or names[:1]
            for name in names:
                if name in modules and modules[name] != path:
                    found.append(Arrow(path, modules[name], node.lineno, node in inside))
    return tuple(found)


def circles(found: Sequence[Arrow]) -> list[list[Path]]:
    """The strongly connected components of more than one file (Tarjan's algorithm)."""
    graph: dict[Path, set[Path]] = defaultdict(set)
    for arrow in found:
        graph[arrow.source].add(arrow.target)
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    components = []

    def visit(node: Path) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [c for c in components if len(c) > 1]


def room(path: Path) -> str:
    """The room a file stands in: `implementations`, or `conformance/<top-level name>`."""
    if path.parts[0] != "conformance":
        return path.parts[0]
    return f"conformance/{path.parts[1].removesuffix('.py')}"


def _says_why(source: str) -> set[int]:
    """The first lines of the import statements that carry a comment: on one of their own
    lines, or in the comment right above the run of imports they stand in."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    comments = {t.start[0] for t in tokens if t.type == tokenize.COMMENT}
    spans = {
        node.lineno: node.end_lineno or node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
    }
    ends = {end: start for start, end in spans.items()}
    said = set()
    for start, end in spans.items():
        above = start - 1
        while above in ends:  # over the imports of the same run
            above = ends[above] - 1
        if comments & {above, *range(start, end + 1)}:
            said.add(start)
    return said


def test_there_is_no_import_circle():
    found = circles(arrows())
    assert not found, "import circles:\n" + "\n".join(
        ", ".join(str(p) for p in circle) for circle in found
    )


def test_every_room_is_placed_in_the_layers():
    rooms = {room(path) for path in _files()}
    assert rooms - set(FLOOR) == set(), "rooms with no floor in LAYERS"
    assert set(FLOOR) - rooms == set(), "LAYERS names rooms that are not there"


def test_no_arrow_runs_back_up():
    placed = [a for a in arrows() if room(a.source) in FLOOR and room(a.target) in FLOOR]
    upward = [
        f"{a.source}:{a.line} ({room(a.source)}, floor {FLOOR[room(a.source)]}) imports "
        f"{a.target} ({room(a.target)}, floor {FLOOR[room(a.target)]})"
        for a in placed
        if room(a.source) != room(a.target) and FLOOR[room(a.source)] <= FLOOR[room(a.target)]
    ]
    assert not upward, "arrows to the same floor or above:\n" + "\n".join(upward)


def test_every_import_of_a_project_module_inside_a_function_says_why():
    deferred = [a for a in arrows() if a.in_function]
    said = {
        path: _says_why((ROOT / path).read_text(encoding="utf-8"))
        for path in {a.source for a in deferred}
    }
    silent = sorted(
        {
            f"{a.source}:{a.line} imports {a.target}"
            for a in deferred
            if a.line not in said[a.source]
        }
    )
    assert not silent, (
        "imports of project modules inside functions, with no comment (on the import, or "
        "above its run of imports) saying why they cannot stand at module top:\n"
        + "\n".join(silent)
    )


def test_the_reading_sees_what_it_is_meant_to():
    """The checks above can fail: a made-up circle and a deferred import are found."""
    made_up = [
        Arrow(Path("conformance/a.py"), Path("conformance/b.py"), 1, False),
        Arrow(Path("conformance/b.py"), Path("conformance/c.py"), 1, False),
        Arrow(Path("conformance/c.py"), Path("conformance/a.py"), 1, False),
        Arrow(Path("conformance/c.py"), Path("conformance/d.py"), 1, False),
    ]
    assert circles(made_up) == [[Path(f"conformance/{n}.py") for n in "abc"]]
    # A comment on the import, or above its run of imports, says why; nothing else does.
    source = "def f():\n    from . import a\n    # why\n    from . import b\n    import c  # why\n"
    assert _says_why(source) == {4, 5}
    assert _says_why(source.replace("  # why", "").replace("    # why\n", "\n")) == set()
    # conformance/__init__.py loads its API on first use: a deferred import the reading sees.
    lazy = [a for a in arrows() if a.source == Path("conformance/__init__.py")]
    assert [(a.target, a.in_function) for a in lazy] == [(Path("conformance/api.py"), True)]
