"""The sweep's matrix for the terminal (rich) and as Markdown, from its data (`to_json`).

Rows are port x version set; columns the properties (the run matrix's own cells) and the
remat policies (one cell each: ✓ the canonical's results and what its stack declares, ✗ not,
- not expressible, with D where a documented degradation concerns the cell: D it holds
here, D✗ it does not, D? its probe failed). Under the matrix: each set (installed or
reused, the pins released, why one was not run or not installed), the documented
degradations across the sets, and one line per failure.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..merge.render import cell_markup
from ..terminal import style as terminal_style
from ..terminal.markdown import md_cell as _md
from ..terminal.markdown import plain as _plain

SHORT = {"save_dots": "dots", "save_named": "named", "offload_dots": "offload"}
MARKS = {"pass": "[green]✓[/]", "fail": "[bold red]✗[/]", "inexpressible": "[dim]-[/]",
         "unknown": "[yellow]?[/]"}  # fmt: skip
CAPTION = (
    "Rows: each port at each version set (lowest: the lowest each requirement of the extra "
    "allows and the index serves; pin: constraints.txt; newest: the newest served), every "
    "other distribution at its pin. Property cells are the run matrix's: ✓N passed on N "
    "examples (below it the worst error/bound), ✗fail @N, ref, skip. Policy cells (a small "
    "shape, as compare's policy matrix): ✓ the canonical's results and what the stack "
    "declares, ✗ not, - not expressible; D a documented degradation holds there, D✗ it does "
    "not, D? its probe failed. ·: the set was not run or not installed (below: why)."
)


def title(data: dict[str, Any]) -> str:
    examples = data.get("max_examples")
    examples = "the profile's" if examples is None else examples
    ran = any(found["state"] == "ran" for found in data["sets"])
    verdict = "some failed" if data.get("failed") else "all passed" if ran else "no set ran"
    return (
        f"remat-conformance versions · extra {data['extra']} · {len(data['sets'])} version "
        f"sets · profile {data['profile']} · {examples} examples per property · {verdict}"
    )


def policy_cell(cell: dict[str, Any] | None) -> str:
    """One policy cell as markup."""
    if not cell:
        return ""
    text = MARKS.get(cell["mark"], "?")
    for documented in cell.get("degradations", []):
        holds = documented["holds"]
        text += (
            " [yellow]D[/]" if holds else " [bold red]D✗[/]" if holds is False else " [yellow]D?[/]"
        )
    return text


def _versions(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in (row.get("versions") or {}).items())


def _set_heading(data: dict[str, Any], index: int) -> str:
    found = data["sets"][index]
    return found["title"]


def table(data: dict[str, Any]) -> Table:
    keys = list(data["properties"])
    policies = data["policies"] if any(r.get("policies") for r in data["rows"]) else []
    grid = Table(
        title=escape(title(data)),
        box=box.ASCII2 if terminal_style.OPTIONS.plain else box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,
        title_justify="left",
    )
    grid.add_column("port")
    for key in keys:
        grid.add_column(f"({key.split('_', 1)[0]})", justify="center", no_wrap=True)
    for policy in policies:
        grid.add_column(SHORT.get(policy, policy), justify="center", no_wrap=True)
    grid.add_column("time", justify="right", no_wrap=True)
    last = None
    for row in data["rows"]:
        if row["set"] != last:
            if last is not None:
                grid.add_section()
            last = row["set"]
            grid.add_row(f"[bold]{escape(_set_heading(data, row['set']))}[/]",
                         *[""] * (len(keys) + len(policies) + 1))  # fmt: skip
        if not row["port"]:
            grid.add_row(
                f"[bold red]{escape(row['state'])}[/]" if row["state"] != "not run"
                else "[yellow]not run[/]",
                *["[dim]·[/]"] * (len(keys) + len(policies)), "",
            )  # fmt: skip
            continue
        label = f"{escape(row['port'])}\n[dim]{escape(_versions(row))}[/]"
        if row["state"] != "available":
            cells = ["[dim]·[/]"] * (len(keys) + len(policies))
            time = terminal_style.state_markup(row["state"])
        else:
            cells = [cell_markup(row["outcomes"].get(key)) for key in keys]
            cells += [policy_cell(row["policies"].get(p)) for p in policies]
            time = f"{row.get('seconds') or 0:.0f}s"
        grid.add_row(label, *cells, time)
    return grid


def legend(data: dict[str, Any]) -> str:
    names = (key.partition("_") for key in data["properties"])
    return " · ".join(f"({letter}) {name.replace('_', ' ')}" for letter, _, name in names)


def set_lines(data: dict[str, Any]) -> list[str]:
    """Per set: what was done, and why a set was not run or not installed."""
    lines = []
    for found in data["sets"]:
        head = found["title"]
        if found["state"] == "ran":
            seconds = found["install_seconds"]
            how = "venv reused" if found["reused"] else f"installed in {seconds:.0f} s"
            parts = [how, f"suite {found['run_seconds']:.0f} s"]
            if found["probe_seconds"]:
                parts.append(f"probes {found['probe_seconds']:.0f} s")
            if found["released"]:
                released = ", ".join(f"{k}=={v}" for k, v in found["released"].items())
                parts.append(f"pins released: {released}")
            installed = ", ".join(f"{k} {v}" for k, v in sorted(found["installed"].items()))
            lines.append(f"{head}: {'; '.join(parts)}; installed {installed}")
        else:
            lines.append(f"{head}: {found['state']}: {found['reason']}")
        lines += [f"  note: {note}" for note in found["notes"] if found["state"] == "ran"]
    return lines


def degradation_lines(data: dict[str, Any]) -> list[str]:
    """Per documented degradation: where it holds, and the first version that differs."""
    sets = data["sets"]
    lines = []
    for found in data["degradations"]:
        head = f"{found['family']} · {found['policy']}: {found['what']}"
        head += f" (documented: {found['measured']})"
        results = found["results"]
        if not results:
            lines.append(f"{head}: not probed")
            continue
        known = [r for r in results if r["holds"] is not None]
        errors = [f"{sets[r['set']]['title']}: {r['error']}" for r in results if r["error"]]
        if known and all(r["holds"] for r in known):
            said = "holds at every version swept"
        elif known and not any(r["holds"] for r in known):
            said = "holds at no version swept"
        else:
            said = "holds at " + ", ".join(
                sets[r["set"]]["title"] for r in known if r["holds"]
            ) if known else "no probe answered"  # fmt: skip
        if found["first_difference"] is not None:
            said += f"; the first version that differs: {sets[found['first_difference']]['title']}"
        for change in found["changes"]:
            verb = "starts holding" if change["holds"] else "stops holding"
            said += f"; {verb} at {sets[change['to']]['title']}"
        lines.append(f"{head}: {said}")
        lines += [f"  probe failed at {e}" for e in errors]
        for r in known:
            lines.append(f"  {sets[r['set']]['title']}: {r['seen']}")
    return lines


def print_sweep(data: dict[str, Any], console: Console) -> None:
    from .summary import failures

    terminal_style.print_table(console, table(data))
    terminal_style.print_legend(console, legend(data), CAPTION)
    console.print("[bold]version sets[/]")
    for line in set_lines(data):
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    if data["degradations"]:
        console.print("[bold]documented degradations[/]")
        for line in degradation_lines(data):
            console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    for line in failures(data):
        console.print(f"[bold red]✗[/] {escape(line)}", highlight=False, soft_wrap=True)
    if data.get("interrupted"):
        console.print("[bold yellow]interrupted[/]: the matrix holds the sets that finished")


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------


def _md_item(line: str) -> str:
    """A list item; a line indented under the one before (two spaces) stays nested."""
    depth = (len(line) - len(line.lstrip(" "))) // 2
    return "  " * depth + f"- {_md(line.strip())}"


def markdown(data: dict[str, Any]) -> str:
    """The same matrix and lists as Markdown."""
    from .summary import failures

    keys = list(data["properties"])
    policies = data["policies"] if any(r.get("policies") for r in data["rows"]) else []
    header = ["port", *(f"({k.split('_', 1)[0]})" for k in keys),
              *(SHORT.get(p, p) for p in policies), "time"]  # fmt: skip
    lines = [f"## {_md(title(data))}", "", "| " + " | ".join(header) + " |"]
    lines.append("| --- | " + " | ".join(":-:" for _ in header[1:-1]) + " | --: |")
    last = None
    for row in data["rows"]:
        if row["set"] != last:
            last = row["set"]
            heading = _md(_set_heading(data, row["set"]))
            lines.append(f"| **{heading}** |" + " |" * (len(header) - 1))
        if not row["port"]:
            lines.append(f"| {_md(row['state'])} |" + " · |" * (len(header) - 2) + " |")
            continue
        label = f"{_md(row['port'])}<br>{_md(_versions(row))}"
        if row["state"] != "available":
            cells = ["·"] * (len(header) - 2)
            time = _md(row["state"])
        else:
            cells = [_md(_plain(cell_markup(row["outcomes"].get(k)))) for k in keys]
            cells += [_md(_plain(policy_cell(row["policies"].get(p)))) for p in policies]
            time = f"{row.get('seconds') or 0:.0f}s"
        lines.append("| " + " | ".join([label, *cells, time]) + " |")
    lines += ["", _md(legend(data)), "", _md(CAPTION), "", "**Version sets**", ""]
    lines += [_md_item(line) for line in set_lines(data)]
    if data["degradations"]:
        lines += ["", "**Documented degradations**", ""]
        lines += [_md_item(line) for line in degradation_lines(data)]
    found = failures(data)
    if found:
        lines += ["", "**Failures**", ""]
        lines += [f"- ✗ {_md(line)}" for line in found]
    return "\n".join(lines) + "\n"
