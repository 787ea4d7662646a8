"""One home per report table (issue 75, item 5), read from the code: every table is built in
`conformance/tables/kinds/` and nowhere else, and the page's sections come from a registry of
kinds (`conformance.page.kinds.KINDS`), not from a chain of `if` on the report's kind."""

from __future__ import annotations

import ast
from pathlib import Path

from conformance.page.kinds import KINDS
from conformance.tables.reports import KINDS as REPORT_KINDS
from tests.support.helpers import ROOT

#: Where tables are built; `model.py` defines them (its `TableBuilder.build` makes one).
HOME = Path("conformance/tables/kinds")
MODEL = Path("conformance/tables/model.py")
#: The names that make a model table.
MAKERS = {"Table", "TableBuilder"}


def _name(node: ast.expr) -> str:
    """`Table` for `Table`, `model.Table` and the like."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _makers(classes: list[ast.ClassDef]) -> set[str]:
    """`MAKERS` and every class built on one of them (a page's own `PlainBuilder`, say),
    wherever it is called from."""
    makers = set(MAKERS)
    while True:
        found = {c.name for c in classes if any(_name(b) in makers for b in c.bases)}
        if found <= makers:
            return makers
        makers |= found


def builders(nodes: list[ast.AST], makers: set[str]) -> list[int]:
    """The lines among `nodes` (a file's) that make a model table: a call to one of
    `makers`, or a class built on one."""
    found = []
    for node in nodes:
        if isinstance(node, ast.ClassDef) and any(_name(b) in makers for b in node.bases):
            found.append(node.lineno)
        if isinstance(node, ast.Call) and _name(node.func) in makers:
            found.append(node.lineno)
    return sorted(found)


def builders_outside_home(root: Path) -> list[str]:
    """`path:line` of every table built under `root/conformance` outside `HOME`."""
    paths = sorted((root / "conformance").rglob("*.py"))
    nodes = {p: list(ast.walk(ast.parse(p.read_text(encoding="utf-8")))) for p in paths}
    makers = _makers([n for found in nodes.values() for n in found if isinstance(n, ast.ClassDef)])
    found = []
    for path, in_file in nodes.items():
        relative = path.relative_to(root)
        if relative == MODEL or HOME in relative.parents:
            continue
        found += [f"{relative}:{line}" for line in builders(in_file, makers)]
    return found


def test_every_table_is_built_in_tables_kinds():
    assert builders_outside_home(ROOT) == []


def test_a_table_built_elsewhere_is_found(tmp_path):
    # The finder finds each way a table is made, so that an empty list above means none.
    planted = tmp_path / "conformance" / "page" / "extra.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(
        "from ..tables import model\n"
        "from ..tables.model import Table, TableBuilder\n"
        "class Mine(TableBuilder):\n    pass\n"
        "a = Table('t', ())\n"
        "b = model.TableBuilder('t', ['c']).build()\n"
        "c = Mine('t', ['c'])\n"
    )
    home = tmp_path / HOME / "fine.py"
    home.parent.mkdir(parents=True)
    home.write_text(
        "from ..model import Table, TableBuilder\n"
        "class Plain(TableBuilder):\n    pass\n"
        "a = Table('t', ())\n"
    )
    (planted.parent / "other.py").write_text(
        "from ..tables.kinds.fine import Plain\nd = Plain('t', [])\n"
    )
    assert builders_outside_home(tmp_path) == [
        "conformance/page/extra.py:3",
        "conformance/page/extra.py:5",
        "conformance/page/extra.py:6",
        "conformance/page/extra.py:7",
        "conformance/page/other.py:2",
    ]


def test_every_kind_of_report_declares_its_section():
    assert sorted(KINDS) == sorted(REPORT_KINDS)
    for name, kind in KINDS.items():
        assert kind.title, name
        assert kind.anchor, name


def test_the_page_s_sections_name_no_kind():
    # No `if doc.kind == ...` (or `elif`, or a match) in `sections`: the registry decides.
    tree = ast.parse((ROOT / "conformance" / "page" / "sections.py").read_text(encoding="utf-8"))
    branches = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.If | ast.Match)
        and any(
            isinstance(n, ast.Attribute) and n.attr == "kind"
            for n in ast.walk(node.test if isinstance(node, ast.If) else node.subject)
        )
    ]
    assert branches == []
