"""`python -m conformance report`: one self-contained HTML page from every kind of result
the project writes (`tables.reports.KINDS`): run, compare, the benches and version sweeps.

Give it the JSON reports (`run --json > run.json`, `compare --json >
compare.json`, `bench --out DIR` writes DIR/bench.json, `bench --policies`
DIR/bench-policies.json, `bench --schedules` DIR/bench-schedules.json, `bench
--scale` DIR/scale.json, `versions EXTRA --out sweep.json` a version sweep), or
let it make them: `--make` takes one choice per kind (`MAKES`: run, compare,
bench, policies, schedules, scale, versions) and runs that command now, each in
a child process of its own (`--implementation` narrows the ports, `--profile`
the run), and reports on what it wrote. `--make bench`, `policies` and
`schedules` run a quick sweep by default (`QUICK_BENCH`: JAX and torch, small
shapes, five repeats; under a minute each on two cores), `--make versions` the
lowest and pinned sets of `--versions-extra` (default jax) at the dev profile;
`--full-bench` runs each command's own defaults (many minutes); `--make scale`
is the whole scale bench (a few minutes). The page opens with one row per port
(conforms, policies honoured, the cost of wrapping twice), then the conformance
grid and its details, the mutation score, the compare table, the policy grid,
the composition grid, the precision bits and pictures, the benches' tables and
pictures, a version sweep's matrix, and the machine and versions; CSS and
images are inline, so it opens from `file://` with no network. `--markdown PATH` writes the same
content as Markdown (for a CI summary), its pictures beside it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from implementations import manifests

from .. import outputs
from ..page import DocumentError, build
from ..page.documents import Document, read
from ..running import interrupts, profiles
from . import arguments

HELP = "one self-contained HTML page (and Markdown) from run, compare and bench reports"
#: `--make CHOICE` -> the kind of report it makes (`tables.reports.KINDS`): one for each.
MAKES = {
    "run": "run",
    "compare": "compare",
    "bench": "bench",
    "policies": "bench-policies",
    "schedules": "bench-schedules",
    "scale": "scale",
    "versions": "versions",
}
MAKEABLE = tuple(MAKES)
#: `--make bench` and `--make policies` unless `--full-bench`: a sweep of under a minute on
#: two cores over the bench stacks their manifests mark quick (those not installed are
#: skipped, with the reason).
QUICK_FRAMEWORKS = tuple(
    entry.name for manifest in manifests.manifests() for entry in manifest.bench if entry.quick
)
QUICK_BENCH = (
    *(word for name in QUICK_FRAMEWORKS for word in ("--framework", name)),
    *("--batch", "64", "--features", "32", "--repeats", "5", "--max-repeats", "5"),
)
QUICK_DEPTHS = {"bench": ("1", "2", "4"), "policies": ("2",), "schedules": ("1", "2", "4", "8")}
#: `--make versions` unless `--full-bench`: the lowest and the pinned versions of the extra,
#: each set's run at the dev profile, no mutants (a few minutes: two venvs to install).
QUICK_VERSIONS = ("--versions", "lowest", "pin", "--profile", "dev", "--no-mutants")
#: `--make versions` sweeps this extra unless `--versions-extra` names another.
VERSIONS_EXTRA = "jax"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "reports",
        nargs="*",
        type=arguments.existing_file,
        metavar="REPORT.json",
        help="run --json, compare --json, bench.json or versions --out reports, shown in this "
        "order",
    )
    parser.add_argument(
        "--out",
        type=arguments.writable_file,
        default="report.html",
        metavar="PATH",
        help="the HTML page to write; an existing file is replaced (default: report.html)",
    )
    parser.add_argument(
        "--markdown",
        type=arguments.writable_file,
        default=None,
        metavar="PATH",
        help="also write the report as Markdown, its pictures in <stem>-pictures/ beside it",
    )
    parser.add_argument(
        "--make",
        action="append",
        choices=MAKEABLE,
        help="run this command now and report on it (repeatable): run (the suite), "
        f"compare (without first calls), bench (a quick sweep: {', '.join(QUICK_FRAMEWORKS)}, "
        "depths 1 2 4, batch 64, F 32, 5 repeats; under a minute), policies (bench "
        "--policies, as quick, at L=2), schedules (bench --schedules, as quick, depths 1 to "
        "8), scale (bench --scale: a few minutes), versions (versions EXTRA --versions lowest "
        "pin at the dev profile: installs two venvs, minutes)",
    )
    parser.add_argument(
        "--versions-extra",
        default=VERSIONS_EXTRA,
        metavar="EXTRA",
        help=f"with --make versions: the framework extra to sweep (default: {VERSIONS_EXTRA})",
    )
    parser.add_argument(
        "--full-bench",
        action="store_true",
        help="with --make bench/policies/schedules/versions: the command's own defaults "
        "(every framework, the bench's depths and batch; every version set: many minutes) "
        "instead of the quick sweep",
    )
    parser.add_argument(
        "--save-reports",
        type=arguments.writable_directory,
        default=None,
        metavar="DIR",
        help="with --make: keep the JSON reports it made in DIR (run.json, compare.json, "
        "bench.json, bench-policies.json, bench-schedules.json, scale.json, versions.json), "
        "to build the page again from them",
    )
    parser.add_argument(
        "--implementation",
        "--port",
        nargs="+",
        action=arguments.PortsThenFiles,
        metavar="NAME",
        help="with --make run/compare/versions: only these ports (several after one flag, or "
        "repeated); REPORT.json files may follow them",
    )
    parser.add_argument(
        "--profile",
        type=arguments.profile_name,
        default=None,
        help=f"with --make run: the Hypothesis profile ({', '.join(profiles.PROFILES)})",
    )
    parser.add_argument(
        "--no-pictures", action="store_true", help="leave the pictures out (no matplotlib needed)"
    )


def validate(args: argparse.Namespace) -> None:
    """A report needs something to show; files given after `--implementation`'s ports are
    reports too."""
    args.reports = [*args.reports, *(getattr(args, arguments.FILES_AFTER_PORTS, None) or [])]
    if not args.reports and not args.make:
        raise arguments.UsageError(f"give REPORT.json files, or --make {'/'.join(MAKEABLE)}")
    if "versions" in (args.make or ()):  # the sweep's plan, checked before anything runs
        from .. import versions

        try:
            versions.make(args.versions_extra, list(QUICK_VERSIONS[1:3]), args.implementation)
        except versions.PlanError as error:
            raise arguments.UsageError(f"--versions-extra: {error}") from None


def make_command(kind: str, args: argparse.Namespace, scratch: Path) -> tuple[list[str], Path]:
    """The child command that makes one report, and the file it ends up in."""
    command = [sys.executable, "-m", "conformance", kind]
    ports = [w for name in args.implementation or () for w in ("--implementation", name)]
    if kind == "run":
        profile = ["--profile", args.profile] if args.profile else []
        return [*command, "--json", *profile, *ports], scratch / "run.json"
    if kind == "compare":
        return [*command, "--json", "--no-first-call", *ports], scratch / "compare.json"
    if kind == "versions":
        quick = [] if args.full_bench else list(QUICK_VERSIONS)
        extra = getattr(args, "versions_extra", None) or VERSIONS_EXTRA
        sweep = [*command, extra, *quick, *ports]
        return [*sweep, "--out", str(scratch / "versions.json")], scratch / "versions.json"
    command[3] = "bench"
    out = scratch / kind
    quick = [] if args.full_bench else [*QUICK_BENCH, "--depths", *QUICK_DEPTHS.get(kind, ())]
    if kind == "scale":
        return [*command, "--scale", "--out", str(out)], out / "scale.json"
    if kind == "policies":
        return [*command, "--policies", "--out", str(out), *quick], out / "bench-policies.json"
    if kind == "schedules":
        return [*command, "--schedules", "--out", str(out), *quick], out / "bench-schedules.json"
    return [*command, "--out", str(out), *quick], out / "bench.json"


def make(kind: str, args: argparse.Namespace, scratch: Path):
    """Run one command in a child process; its report, named by the command that made it.
    Exit 1 (a failed check) still made a report; any other failure raises RuntimeError.
    **Returns:** a `conformance.page.Document`."""
    command, path = make_command(kind, args, scratch)
    print(f"report: running {' '.join(command[2:])}", file=sys.stderr)
    stdout = path.open("w") if kind in ("run", "compare") else subprocess.DEVNULL
    try:
        done = subprocess.run(command, stdout=stdout, check=False)
    finally:
        if stdout is not subprocess.DEVNULL:
            stdout.close()
    interrupts.check()
    if done.returncode not in (0, 1) or not path.exists() or not path.stat().st_size:
        raise RuntimeError(f"{kind} exited {done.returncode} without a report")
    found = read(path)
    saved = getattr(args, "save_reports", None)
    if saved is not None:
        saved.mkdir(parents=True, exist_ok=True)
        outputs.write_bytes(saved / path.name, path.read_bytes())  # whole or not at all
    return Document(found.kind, "made now: " + " ".join(command[3:]), found.data)


def run(args: argparse.Namespace) -> int:
    """Write the page (and the Markdown); exit 2 when a report cannot be read or made."""
    with tempfile.TemporaryDirectory(prefix="conformance-report-") as scratch:
        reports = list(args.reports)
        try:
            reports += [make(kind, args, Path(scratch)) for kind in args.make or ()]
            report = build(
                reports,
                html_path=args.out,
                markdown_path=args.markdown,
                pictures=not args.no_pictures,
            )
        except (DocumentError, RuntimeError) as error:
            print(f"python -m conformance report: error: {error}", file=sys.stderr)
            return 2
    written = [report.html_path, report.markdown_path]
    print("report: wrote " + ", ".join(str(p) for p in written if p), file=sys.stderr)
    return 0
