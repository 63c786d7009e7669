"""The ``faceoff`` command line: argument parsing, and the one place an error becomes an exit.

Each command imports its own module (``flows.cli.<command>``: the ledger, Prefect, Docker,
the evidence renderers) only when it runs, so that ``--help``, ``version`` and a usage error
answer at once.
"""

from __future__ import annotations

import itertools
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from faceoff import __version__
from faceoff.cycles import cycle_collection_paused
from faceoff.errors import FaceoffError
from faceoff.exits import Exit, help_text
from faceoff.formats.bundle.reviews import Decision

# Plain help (no rich markup): a flag shows no "<bool>" it would not take, a command's summary
# is its first sentence on one line, and brackets in help ("[rule]") are text.
app = typer.Typer(
    add_completion=False,
    help="LLM serving qualification.",
    epilog=help_text(),
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(__version__)
        raise typer.Exit


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """LLM serving qualification."""


class LogFormat(StrEnum):
    """How ``faceoff run`` writes its log lines and its end."""

    TEXT = "text"
    JSON = "json"


class ReasoningField(StrEnum):
    """Where the simulator streams reasoning text (docs/architecture.md "Reasoning field")."""

    REASONING = "reasoning"
    REASONING_CONTENT = "reasoning_content"


MatrixPath = Annotated[Path, typer.Argument(help="Matrix TOML file.")]
CampaignOrFolder = Annotated[
    str,
    typer.Argument(
        metavar="CAMPAIGN|FOLDER",
        help="Campaign name (in the workdir or ledger), or a bundle folder.",
    ),
]
Workdir = Annotated[
    Path,
    typer.Option("--workdir", envvar="FACEOFF_WORKDIR", help="Where campaigns write evidence."),
]
DbUrl = Annotated[
    str | None, typer.Option("--db", help="SQLAlchemy URL of the ledger (default: SQLite file).")
]
AaTwin = Annotated[
    bool,
    typer.Option(
        "--aa",
        help="The matrix's A/A twin: the incumbent's recipe on every arm, as campaign "
        '<name>-aa (docs/matrix.md "A/A twin").',
    ),
]
Trust = Annotated[
    list[Path] | None,
    typer.Option(
        "--trust",
        metavar="PUBLIC_KEY",
        help="A public key (or trust file) whose signatures to accept; repeat for several. "
        "No secret is needed (docs/evidence.md: public-key signatures).",
    ),
]
AsJson = Annotated[
    bool,
    typer.Option(
        "--json",
        help='Print JSON for scripts, errors too (docs/flows.md "Output for scripts").',
    ),
]
Waive = Annotated[
    list[str] | None,
    typer.Option(
        "--waive",
        metavar="CHECK",
        help="Go on despite this preflight check's FAILs (repeat); needs --reason. Recorded "
        "in MANIFEST.json and on the card.",
    ),
]
WaiveReason = Annotated[str | None, typer.Option("--reason", help="Why the waived checks.")]


@app.command()
def validate(
    path: MatrixPath,
    *,
    as_json: AsJson = False,
    aa: AaTwin = False,
    power: Annotated[
        bool,
        typer.Option(
            "--power",
            help="Also what the plan can decide: per rule criterion and counted cell, the "
            "smallest difference detected and the requests needed (docs/evidence.md: power), "
            "with variances learned from the ledger's earlier nights.",
        ),
    ] = False,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
) -> None:
    """Check a matrix; print its plan and matrix id.

    Also where each arm listens and the worst case by its deadlines; with --aa, all of it for
    the matrix's A/A twin; with --power, what the plan can decide."""
    from flows.cli.validate import validate as command  # noqa: PLC0415  (see the module docstring)

    command(path, as_json=as_json, aa=aa, power=power, workdir=workdir, db=db)


@app.command()
def preflight(
    path: MatrixPath,
    *,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
    as_json: AsJson = False,
    waive: Waive = None,
    reason: WaiveReason = None,
    aa: AaTwin = False,
) -> None:
    """Check the campaign host before the night, touching no lane.

    GPUs, images, mounts, context, secrets, ports, the serving incumbent, disk, Prefect, the
    ledger, protected files, the rule and time. Exit 2 on a FAIL nobody waived (docs/flows.md:
    before the night)."""
    from flows.cli.preflight import preflight as command  # noqa: PLC0415

    command(path, workdir, db, as_json=as_json, waive=waive or [], reason=reason, aa=aa)


ArmImage = Annotated[
    str | None, typer.Option(metavar="REPO@sha256:…", help="The arm's image, pinned by digest.")
]
ArmServe = Annotated[
    str | None,
    typer.Option(
        metavar="'vllm serve MODEL …'",
        help="The arm's vLLM command line, quoted: its model, --port, --max-model-len, "
        "--tensor-parallel-size, --quantization, --kv-cache-dtype, --speculative-config… "
        "fill the arm's fields (with an image: the container's arguments).",
    ),
]


@app.command()
def init(
    output: Annotated[Path, typer.Argument(help="The matrix file to write.")] = Path("matrix.toml"),
    *,
    incumbent_image: ArmImage = None,
    candidate_image: ArmImage = None,
    incumbent_serve: ArmServe = None,
    candidate_serve: ArmServe = None,
    model: Annotated[
        str | None, typer.Option(help="The model path an image serves, without a serve line.")
    ] = None,
    gpus: Annotated[
        str | None, typer.Option(metavar="0,1", help="GPU indices both arms use, in turn.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Campaign name (default: the file's).")] = None,
    replace: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starting matrix.

    From flags, or without them on a terminal from questions; it is validated before it is
    written, and the next command is printed."""
    from flows.cli.init import InitFlags  # noqa: PLC0415
    from flows.cli.init import init as command  # noqa: PLC0415

    images = {"incumbent": incumbent_image, "candidate": candidate_image}
    serves = {"incumbent": incumbent_serve, "candidate": candidate_serve}
    command(output, InitFlags(images, serves, model, gpus, name), replace=replace)


@app.command("freeze")
def freeze_cmd(
    path: MatrixPath,
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write it.")] = Path(
        "matrix.frozen.json"
    ),
    replace: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write the frozen matrix (canonical content and its sha256 id)."""
    from flows.cli.validate import freeze_file as command  # noqa: PLC0415

    command(path, output, replace=replace)


@app.command()
def status(
    campaign: Annotated[
        str | None, typer.Argument(metavar="CAMPAIGN", help="Campaign name; all when omitted.")
    ] = None,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
    all_hosts: Annotated[
        bool,
        typer.Option(
            "--all-hosts",
            help="Every host's campaigns in a shared ledger (default: this host's, "
            "FACEOFF_HOST or its name).",
        ),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Show this host's campaigns, or one campaign.

    A list: host, start, duration, counts, decision. One campaign: its times, decision,
    restoration, whether its incumbent answers now, and its cell runs."""
    with cycle_collection_paused():
        from flows.cli.status import status as show  # noqa: PLC0415

        show(campaign, workdir, db, all_hosts=all_hosts, as_json=as_json)


@app.command()
def run(
    path: MatrixPath,
    *,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
    diagnose: Annotated[
        str | None,
        typer.Option(
            metavar="CELL",
            help="Run no cells: send one request of CELL's prompts to each arm's lane in "
            "turn (journaled, never scored), with /metrics and the log tail around it, into "
            "the bundle's diagnostics/; restore the incumbent; print the paired table. "
            "Exit 0 every request ok, 3 not, 4 not restored.",
        ),
    ] = None,
    aa: AaTwin = False,
    waive: Waive = None,
    reason: WaiveReason = None,
    signing_key: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="The operator's Ed25519 private key to seal the bundle with (as "
            "FACEOFF_SIGNING_KEY_FILE names it; the flag wins).",
        ),
    ] = None,
    log_format: Annotated[
        LogFormat,
        typer.Option(
            "--log-format",
            help="text: lines for people (the live view on a terminal; redirected, plain and "
            "full width); json: each log line, and the run's end with every cell, one JSON "
            "object a line, for log shippers (no live view).",
        ),
    ] = LogFormat.TEXT,
) -> None:
    """Run (or resume) the campaign of a matrix, after its preflight.

    With --aa, its A/A twin. Exit 0 complete, 3 closed partial, 4 not restored, 2 preflight
    failed or an error, 143 terminated (docs/flows.md)."""
    from flows.cli.run import run as command  # noqa: PLC0415

    if signing_key is not None:  # the flow's processes read it from their environment
        from faceoff.keys import use_signing_key  # noqa: PLC0415

        use_signing_key(signing_key, os.environ)
    command(path, workdir, db, diagnose, aa=aa, waive=waive or [], reason=reason,
            json_logs=log_format is LogFormat.JSON)  # fmt: skip


@app.command()
def restore(
    campaign: Annotated[
        str | None,
        typer.Argument(
            metavar="CAMPAIGN", help="Campaign name; every campaign pending restoration if omitted."
        ),
    ] = None,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
    old_campaign: Annotated[
        str | None, typer.Option("--campaign", hidden=True, help="Deprecated: name it plainly.")
    ] = None,
) -> None:
    """Bring the incumbent back; write the receipt.

    A restored campaign whose incumbent answers is left alone; one whose incumbent stopped
    answering is restored again, with a new receipt."""
    from flows.cli.restore import restore as command  # noqa: PLC0415

    command(campaign or old_campaign, workdir, db)


@app.command()
def teardown(
    campaign: Annotated[
        str | None,
        typer.Argument(
            metavar="CAMPAIGN", help="Campaign name; every campaign of the workdir if omitted."
        ),
    ] = None,
    workdir: Workdir = Path("runs"),
) -> None:
    """Stop every lane a campaign left running.

    Its restored incumbent too: for demos and test hosts."""
    from flows.cli.restore import teardown as command  # noqa: PLC0415

    command(campaign, workdir)


@app.command()
def audit(
    campaign: CampaignOrFolder,
    *,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
    as_json: AsJson = False,
    redraw: Annotated[
        bool,
        typer.Option(
            "--redraw", help="Draw report.html's figures again (slow); else their data is checked."
        ),
    ] = False,
    processes: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Processes that check cells (default: one per usable CPU; 1: this one only).",
        ),
    ] = None,
    trust: Trust = None,
) -> None:
    """Re-verify a bundle, as a checklist.

    Hashes, receipt, summaries, guard verdicts and signatures: with --trust (public keys),
    or FACEOFF_SIGNING_KEY for bundles signed with the shared secret."""
    from flows.cli.audit import audit as command  # noqa: PLC0415

    command(campaign, workdir, db, as_json=as_json, redraw=redraw, processes=processes,
            trust=trust or [])  # fmt: skip


@app.command()
def review(
    campaign: Annotated[str, typer.Argument(metavar="CAMPAIGN", help="Campaign name.")],
    *,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
    decision: Annotated[
        Decision | None, typer.Option(help="The decision to record; omit to only show.")
    ] = None,
    note: Annotated[str | None, typer.Option(help="Why; required with --decision.")] = None,
    reviewer: Annotated[
        str, typer.Option(envvar="USER", help="Who decides (default: $USER).")
    ] = "unknown",
    cell: Annotated[list[str] | None, typer.Option(help="CELL/ARM to rerun (repeat).")] = None,
    force_reason: Annotated[
        str | None,
        typer.Option(
            help="Why the decision stands although the campaign is partial or it contradicts "
            "the matrix's declared rule (written into the review record)."
        ),
    ] = None,
) -> None:
    """Show the dispositions and card; record a decision."""
    from flows.cli.review import review as command  # noqa: PLC0415

    command(
        campaign,
        workdir=workdir,
        db=db,
        decision=decision,
        note=note,
        reviewer=reviewer,
        cells=cell or [],
        force_reason=force_reason,
    )


@app.command()
def tickets(workdir: Workdir = Path("runs"), as_json: AsJson = False) -> None:
    """List open follow-up tickets, with next steps."""
    from flows.cli.tickets import tickets as command  # noqa: PLC0415

    command(workdir, as_json=as_json)


@app.command()
def history(
    *,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
    arm: Annotated[str | None, typer.Option(help="Only this arm.")] = None,
    cell: Annotated[str | None, typer.Option(help="Only this cell.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Only campaigns started on or after YYYY-MM-DD.")
    ] = None,
    as_json: AsJson = False,
    html: Annotated[Path | None, typer.Option(help="Also write the history page here.")] = None,
    trust: Trust = None,
) -> None:
    """Show each night's p50/p95 per arm and cell.

    The headline metrics with intervals, across hosts; audit failures left out of the
    trends; drift flagged and ticketed."""
    with cycle_collection_paused():
        from flows.cli.history import history as show  # noqa: PLC0415

        show(workdir, db, arm=arm, cell=cell, since=since, as_json=as_json, html=html,
             trust=trust or [])  # fmt: skip


@app.command()
def sim(
    *,
    profile: Annotated[str, typer.Option(help="Bundled profile name or a profile TOML.")] = "tiny",
    port: Annotated[int, typer.Option(help="Port to serve on; 0 picks a free one.")] = 8000,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    time_scale: Annotated[float, typer.Option(help="Run the engine model N× faster.")] = 1.0,
    served_model_name: Annotated[str | None, typer.Option(help="Model id to report.")] = None,
    model_path: Annotated[str | None, typer.Option(help="Model root to report.")] = None,
    ground_truth: Annotated[Path | None, typer.Option(help="Journal chunk emit times.")] = None,
    legacy_names: Annotated[bool, typer.Option(help="Expose pre-V1 metric names.")] = False,
    reasoning_field: Annotated[
        ReasoningField | None,
        typer.Option(
            help="The delta field of reasoning text: vLLM 0.32's, or the older reasoning_content."
        ),
    ] = None,
    fault: Annotated[list[str] | None, typer.Option(help="A fault setting, key=value.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="section.key=value.")] = None,
) -> None:
    """Start the engine simulator in the foreground.

    A vLLM-compatible server (docs/simulator.md)."""
    # exec, not import: production packages never import the simulator
    args = ["--profile", profile, "--port", str(port), "--host", host]
    args += ["--time-scale", str(time_scale)]
    for flag, value in (
        ("--served-model-name", served_model_name),
        ("--model-path", model_path),
        ("--ground-truth", ground_truth),
    ):
        args += [flag, str(value)] if value is not None else []
    args += ["--legacy-names"] if legacy_names else []
    args += ["--reasoning-field", reasoning_field.value] if reasoning_field else []
    args += [arg for item in fault or [] for arg in ("--fault", item)]
    args += [arg for item in set_ or [] for arg in ("--set", item)]
    os.execv(sys.executable, [sys.executable, "-m", "simulator", *args])


keys = typer.Typer(
    help="The operator's signing keys.\n\nHow they sign: docs/evidence.md, public-key signatures."
)
app.add_typer(keys, name="keys")


@keys.command("init")
def keys_init(
    out: Annotated[
        Path, typer.Option("--out", help="Folder for the new key pair (created if need be).")
    ] = Path(),
) -> None:
    """Write a new Ed25519 key pair: the private key (mode 0600, never overwritten) to sign
    with, and the public key an auditor trusts (faceoff audit --trust)."""
    from flows.cli.keys import init as command  # noqa: PLC0415

    command(out)


class ExportFormat(StrEnum):
    CSV = "csv"
    JSON = "json"


@app.command()
def export(
    campaign: CampaignOrFolder,
    *,
    workdir: Workdir = Path("runs"),
    db: DbUrl = None,
    form: Annotated[
        ExportFormat, typer.Option("--format", help="csv (a header row) or json.")
    ] = ExportFormat.CSV,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to this file (default: stdout).")
    ] = None,
) -> None:
    """A campaign's figures as rows for spreadsheets.

    One row per cell, arm and figure: each request metric's n, mean, min, max, p50, p95
    (p99 where kept), and the cell run's throughput, goodput and energy per token."""
    from flows.cli.export import export as command  # noqa: PLC0415

    command(campaign, workdir, db, form=form.value, out=out)


@app.command()
def version() -> None:
    """Print faceoff's version."""
    typer.echo(__version__)


def main() -> None:
    args = sys.argv[1:]
    try:
        app(args=args or ["--help"], standalone_mode=False)
    except FaceoffError as exc:
        _fail(exc.message, args, what=exc.what, where=exc.where, fix=exc.fix)
    except typer.Abort:
        raise SystemExit(Exit.INTERRUPTED) from None
    except typer.TyperException as exc:  # usage errors (typer's own click, typer >= 0.26)
        _usage_error(exc, args)
    if not args:  # bare `faceoff` printed the help; still a usage error, as in click
        raise SystemExit(Exit.REFUSED)


# What a person writes after a switch that takes no value (`--json true`).
BOOLEAN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


def _usage_error(exc: typer.TyperException, args: list[str]) -> None:
    """One line naming the problem, one naming the help; exit 2 like every bad input."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "faceoff"
    problem = _switch_given_a_value(ctx, args) or exc.format_message()
    fix = f"Run '{command} --help' for its arguments and options."
    _fail(f"{problem}\n{fix}", args, what=problem, where=None, fix=fix)


def _switch_given_a_value(ctx: object, args: list[str]) -> str | None:
    """A switch such as --json followed by a value it does not take, said as such."""
    params = getattr(getattr(ctx, "command", None), "params", [])
    switches = {o for p in params if getattr(p, "is_flag", False) for o in p.opts}
    for flag, value in itertools.pairwise(args):
        if flag in switches and value.lower() in BOOLEAN_WORDS:
            return (
                f"{flag} is a switch and takes no value (got {value!r}); give {flag} alone to "
                "turn it on, leave it out for off"
            )
    return None


def _fail(
    message: str, args: list[str], *, what: str, where: str | None, fix: str | None
) -> NoReturn:
    """Exit 2 with the error: on stderr, or with --json as an error object on stdout, where
    the script reads (docs/flows.md "Output for scripts")."""
    if "--json" in itertools.takewhile(lambda arg: arg != "--", args):
        from flows.cli.error_output import error_json  # noqa: PLC0415  (only on an error)

        typer.echo(error_json(message, what=what, where=where, fix=fix))
    else:
        typer.echo(f"error: {message}", err=True)
    raise SystemExit(Exit.REFUSED)


if __name__ == "__main__":  # `python -m flows.cli.app`, as `python -m flows` and `faceoff`
    main()
