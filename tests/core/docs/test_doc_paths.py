"""Every repository path the docs cite exists: README.md, docs/*.md, each stack's README.md, and
the comments and docstrings of conformance/checking/tolerance.py; and every link to a heading
(`BENCHMARKS.md#the-suites-own-speed`) finds it.

A path is cited as a relative Markdown link, or as a token whose first part is an entry at the
repository's root (`implementations/stacks/torch/mlp.py`, `docs/*.png`); `<framework>` and `*`
stand for any one name. A token that starts inside a package (`stacks/torch/mlp.py`) is a path
cited from the wrong place, and fails too: a reader cannot find it.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.support.helpers import ROOT

DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "implementations" / "stacks").glob("*/README.md")),
]
#: Python files whose comments and docstrings cite paths.
SOURCES = [ROOT / "conformance" / "checking" / "tolerance.py"]

PART = r"(?:[\w.-]+|<\w+>|\*)"
TOKEN = re.compile(rf"(?<![\w./~<>*:-])({PART}(?:/{PART})+/?)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: The entries at the root a doc may cite (never the virtualenv or git's own).
TOP = {p.name for p in ROOT.iterdir() if p.name not in {".git", ".venv"}}
#: Folders one level into a package: a token starting with one is a path cut short.
INNER = {
    p.name
    for package in ("implementations", "conformance")
    for p in (ROOT / package).iterdir()
    if p.is_dir() and not p.name.startswith("__")
}


def _prose(path: Path) -> str:
    """A Markdown file's text, or a Python file's comments and docstrings."""
    text = path.read_text()
    if path.suffix != ".py":
        return text
    kept = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT or (
            token.type == tokenize.STRING and token.string.startswith(('"""', "'''"))
        ):
            kept.append(token.string)
    return "\n".join(kept)


def _exists(path: str, base: Path) -> bool:
    pattern = re.sub(r"<\w+>", "*", path.rstrip("/"))
    if "*" in pattern:
        return any(base.glob(pattern))
    return (base / pattern).exists()


def cited(path: Path) -> list[tuple[str, Path]]:
    """The repository paths `path` cites, each with the folder it is relative to."""
    text = _prose(path)
    found = []
    for link in LINK.findall(text):
        target = link.split("#", 1)[0]
        if target and not re.match(r"[a-z]+:", target):
            found.append((target, path.parent))
    for token in TOKEN.findall(text):
        token = token.rstrip(".")  # a sentence's full stop
        first = token.split("/", 1)[0]
        if first in TOP or first in INNER:
            found.append((token, ROOT))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # no headings in code
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_to_an_anchor_finds_its_heading(doc):
    broken = []
    for link in LINK.findall(doc.read_text()):
        target, _, anchor = link.partition("#")
        if not anchor or re.match(r"[a-z]+:", target):
            continue
        path = (doc.parent / target).resolve() if target else doc
        if path.suffix == ".md" and path.is_file() and anchor not in anchors(path):
            broken.append(link)
    assert not broken, f"{doc.relative_to(ROOT)} links to headings that do not exist: {broken}"


def test_the_scan_finds_what_it_should():
    assert DOCS[0].name == "README.md"
    assert len([d for d in DOCS if d.parent.parent.name == "stacks"]) >= 1
    some = {p for doc in DOCS for p, _ in cited(doc)}
    assert "docs/PORTING.md" in some
    assert any(p.startswith("implementations/stacks/") for p in some)
    assert "docs/PRECISION.md" in {p for p, _ in cited(SOURCES[0])}
    assert "the-suites-own-speed" in anchors(ROOT / "docs" / "BENCHMARKS.md")
    assert slug("Compiled PyTorch (`torch_compile`)") == "compiled-pytorch-torch_compile"


@pytest.mark.parametrize("doc", DOCS + SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_cited_path_exists(doc):
    missing = []
    for path, base in cited(doc):
        first = path.split("/", 1)[0]
        if base == ROOT and first in INNER and first not in TOP:
            missing.append(f"{path} (cite it from the repository root)")
        elif not _exists(path, base):
            missing.append(path)
    assert not missing, f"{doc.relative_to(ROOT)} cites paths that do not exist: {missing}"


def test_the_benchmarks_page_keeps_todays_figures_only():
    # History lives in git: the page holds the newest measurement of each thing.
    assert len((ROOT / "docs" / "BENCHMARKS.md").read_text().splitlines()) <= 300
