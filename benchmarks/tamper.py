"""Tamper bench: forged bundles against faceoff's own commands and its keyed audit.

    make bench NAME=tamper                                   # every edit, every variant
    .venv/bin/python -m benchmarks.tamper --list             # the edits
    .venv/bin/python -m benchmarks.tamper --only journal_ttft_shaved,added_top_file --keep /tmp/t

A demo-like campaign (two simulator lanes of the demo's profiles; natural cells accepted, a
controlled one failed, so a ticket; a protected file; a signed review) is run once by
``faceoff run`` with an operator's Ed25519 key (``faceoff keys init``), and its incumbent
stopped. Then each edit of ``benchmarks.tamper_edits`` (every kind of file in the bundle:
host facts, the frozen matrix, journals with a TTFT shaved and the summary, verdict and
views recomputed with faceoff's own functions, samples, scrapes, the receipt, reviews,
tickets, lane records, added, deleted and renamed files, dot-files) is applied to a fresh
copy of the workdir (bundle and ledger) in each variant: as is, ``SHA256SUMS`` hashed
again, the seal (``SEAL.dsse.json``) deleted, and both. On each forgery, with the key:
``faceoff audit --trust PUBLIC_KEY`` (must find it: exit 5), ``faceoff review --decision``,
``faceoff restore`` (the incumbent down, so it has work to do) and the same ``faceoff run``
again (a re-run of the closed campaign), each on the forgery as it was made; each must
sign nothing: a signature of the seal,
a receipt or a review that was not in the bundle before the command is counted as newly
signed. The control row (no edit) must be signed by each command, which shows that the
count can see a signature. Printed: per edit, the variants the audit caught, each
command's exit statuses, and what got newly signed; then the totals.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from benchmarks.tamper_edits import EDITS, Edit
from benchmarks.tamper_hostile import hostile_rows, hostile_table, hostile_totals
from evidence.folder.layout import ENVELOPE_FILE
from faceoff.exits import Exit
from faceoff.formats.bundle.reviews import REVIEWS_FILE
from faceoff.keys import PRIVATE_KEY_NAME, PUBLIC_KEY_NAME, SIGNING_KEY_FILE_ENV
from flows.prefect import server as ephemeral
from tests.conftest import free_port
from tests.evidence.forgery import rehash

REPO = Path(__file__).resolve().parents[1]
CAMPAIGN = "tamper-demo"
RUN_TIMEOUT_S = 900.0
COMMAND_TIMEOUT_S = 300.0
VARIANTS = {  # name -> (hash SHA256SUMS again, delete the seal)
    "as-is": (False, False),
    "rehashed": (True, False),
    "seal-deleted": (False, True),
    "rehashed+seal-deleted": (True, True),
}
COMMANDS = ("review", "restore", "re-run")
CONTROL = "none (intact)"

ARM = """
[[arms]]
name = "{name}"
role = "{role}"
lane = "simulator"
port = {port}
served_model = "glm-5.3-flash"
expected_quantization = "{quantization}"
warmups = 1
startup_deadline_s = 120
[arms.probes]
smoke_max_tokens = 400
poll_interval_s = 0.1
[arms.simulator]
profile = "{name}"
time_scale = 20.0
{faults}
"""
MATRIX = """schema_version = 1
protected_files = ["{protected}"]
[campaign]
name = "{campaign}"
seed = 20261017
stop_policy = "continue"
{arms}
[families.not_applicable]
gpu_memory = "simulator lanes run on hosts without GPUs"
[thresholds]
max_stalled_requests = 1.0
max_client_cpu_wait = 1.0
[[cells]]
id = "natural-8192-c1"
kind = "natural"
input_tokens = 8192
concurrency = 1
requests = 4
deadline_s = 300
[cells.sampling]
max_tokens = 512
reasoning_effort = "max"
[[cells]]
id = "controlled-8192-c1"
kind = "controlled"
input_tokens = 8192
concurrency = 1
requests = 2
output_words = 64
deadline_s = 300
[cells.sampling]
max_tokens = 512
reasoning_effort = "max"
"""


@dataclass(frozen=True)
class Base:
    """The signed campaign every forgery starts from, and how to run faceoff on it."""

    root: Path
    pristine: Path  # a copy of the workdir as the campaign left it, incumbent down
    matrix: Path
    public_key: Path
    env: dict[str, str]  # the operator's: the key file named, the bench's Prefect server
    incumbent_port: int

    @property
    def workdir(self) -> Path:
        return self.root / "runs"

    @property
    def bundle(self) -> Path:
        return self.workdir / CAMPAIGN

    def faceoff(self, *args: str, timeout_s: float = COMMAND_TIMEOUT_S) -> tuple[int, str]:
        """Exit status and the output's last line of ``faceoff ARGS`` run as the operator."""
        try:
            done = subprocess.run(
                [sys.executable, "-m", "flows", *args], cwd=REPO, env=self.env,
                capture_output=True, text=True, timeout=timeout_s, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return -1, f"still running after {timeout_s:g} s"
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return done.returncode, said[-1] if said else ""

    @property
    def forged(self) -> Path:
        return self.root / "forged"

    def reset(self, source: Path) -> None:
        """The workdir as ``source`` holds it (bundle, ledger and live records): the
        pristine copy, or the forgery as made."""
        stop_listener(self.incumbent_port)
        shutil.rmtree(self.workdir, ignore_errors=True)
        shutil.copytree(source, self.workdir, symlinks=True)


def operator_env(key_file: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    return env | {SIGNING_KEY_FILE_ENV: str(key_file), "COLUMNS": "160"}


def build(root: Path, prefect_env: dict[str, str]) -> Base:
    """Keys, matrix, the signed campaign and a signed review; then the incumbent stopped and
    the workdir kept aside as the pristine copy."""
    keys = root / "keys"
    subprocess.run([sys.executable, "-m", "flows", "keys", "init", "--out", str(keys)],
                   cwd=REPO, check=True, capture_output=True)  # fmt: skip
    protected = root / "routes.yaml"
    protected.write_text("routes:\n  - llm.primary\n", encoding="utf-8")
    port = free_port()
    arms = ARM.format(name="exl3-r11", role="incumbent", port=port, quantization="exl3",
                      faults="")  # fmt: skip
    arms += ARM.format(name="nvfp4-r2", role="candidate", port=free_port(),
                       quantization="modelopt_fp4",
                       faults="[arms.simulator.faults]\ncontract_overrun = true")  # fmt: skip
    matrix = root / f"{CAMPAIGN}.toml"
    matrix.write_text(MATRIX.format(protected=protected, campaign=CAMPAIGN, arms=arms))
    env = operator_env(keys / PRIVATE_KEY_NAME) | prefect_env
    base = Base(root, root / "pristine", matrix, keys / PUBLIC_KEY_NAME, env, port)
    code, said = base.faceoff("run", str(matrix), "--workdir", str(base.workdir),
                              timeout_s=RUN_TIMEOUT_S)  # fmt: skip
    if code not in (Exit.OK, Exit.PARTIAL):
        raise RuntimeError(f"the campaign did not close (exit {code}): {said}")
    code, said = base.faceoff(*review_args(base, "the bench's first review"))
    if code != Exit.OK:
        raise RuntimeError(f"the first review was not recorded (exit {code}): {said}")
    base.faceoff("teardown", CAMPAIGN, "--workdir", str(base.workdir))
    shutil.copytree(base.workdir, base.pristine, symlinks=True,
                    ignore=shutil.ignore_patterns(ephemeral.PREFECT_DIR))  # fmt: skip
    return base


def review_args(base: Base, note: str) -> list[str]:
    return ["review", CAMPAIGN, "--workdir", str(base.workdir), "--decision", "no_promotion",
            "--note", note]  # fmt: skip


def stop_listener(port: int) -> None:
    """Stop the simulator serving on ``port`` (a restored incumbent), by its process group."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status != psutil.CONN_LISTEN or conn.laddr.port != port or conn.pid is None:
            continue
        with contextlib.suppress(psutil.Error):
            if "simulator" in " ".join(psutil.Process(conn.pid).cmdline()):
                os.killpg(os.getpgid(conn.pid), signal.SIGKILL)
                psutil.Process(conn.pid).wait(30)


# -- signatures -----------------------------------------------------------------------


def signatures(bundle: Path) -> set[str]:
    """Every signature the bundle holds: the seal's, each receipt's and each review's."""
    found = set()
    with contextlib.suppress(OSError, ValueError):
        envelope = json.loads((bundle / ENVELOPE_FILE).read_text(encoding="utf-8"))
        found |= {f"seal {s.get('sig')}" for s in envelope.get("signatures", [])}
    for receipt in bundle.glob("receipt*.json"):
        with contextlib.suppress(OSError, ValueError):
            found.add(f"receipt {json.dumps(json.loads(receipt.read_text()).get('signature'))}")
    with contextlib.suppress(OSError):
        for line in (bundle / REVIEWS_FILE).read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                found.add(f"review {json.dumps(json.loads(line).get('signature'))}")
    return {s for s in found if not s.endswith(" null") and not s.endswith(" None")}


@dataclass
class Forgery:
    edit: str
    variant: str
    audit: int = 0  # `faceoff audit --trust`'s exit status on the forgery as made
    exits: dict[str, int] = field(default_factory=dict)
    signed: dict[str, int] = field(default_factory=dict)  # command -> new signatures
    said: dict[str, str] = field(default_factory=dict)  # command -> its last line

    @property
    def caught(self) -> bool:
        return self.audit == Exit.FINDINGS

    @property
    def newly_signed(self) -> int:
        return sum(self.signed.values())


def forge(base: Base, edit: Edit | None, variant: str) -> Forgery:
    """One forgery, and what each keyed command made of it: each command meets the forgery
    as it was made (the workdir is set back to it before each)."""
    base.reset(base.pristine)
    if edit is not None:
        edit.apply(base.bundle)
    again, strip = VARIANTS[variant]
    if again:
        rehash(base.bundle)
    if strip:
        (base.bundle / ENVELOPE_FILE).unlink(missing_ok=True)
    shutil.rmtree(base.forged, ignore_errors=True)
    shutil.copytree(base.workdir, base.forged, symlinks=True)
    found = Forgery(edit.name if edit else CONTROL, variant)
    found.audit = audit(base)
    for command, args in commands(base):
        base.reset(base.forged)
        before = signatures(base.bundle)
        found.exits[command], found.said[command] = base.faceoff(*args)
        found.signed[command] = len(signatures(base.bundle) - before)
        stop_listener(base.incumbent_port)
    return found


def commands(base: Base) -> Iterator[tuple[str, list[str]]]:
    workdir = str(base.workdir)
    yield "review", review_args(base, "a second look")
    yield "restore", ["restore", CAMPAIGN, "--workdir", workdir]
    yield "re-run", ["run", str(base.matrix), "--workdir", workdir]


def audit(base: Base) -> int:
    code, _ = base.faceoff("audit", str(base.bundle), "--trust", str(base.public_key))
    return code


# -- the table ------------------------------------------------------------------------


def rows(found: list[Forgery]) -> list[list[str]]:
    by_edit: dict[str, list[Forgery]] = {}
    for forgery in found:
        by_edit.setdefault(forgery.edit, []).append(forgery)
    kinds = {edit.name: edit.kind for edit in EDITS}
    table = []
    for name, forgeries in by_edit.items():
        control = name == CONTROL
        caught = sum(f.caught for f in forgeries)
        signed = sum(f.newly_signed for f in forgeries)
        exits = [",".join(sorted({str(f.exits.get(c, "-")) for f in forgeries})) for c in COMMANDS]
        ok = all(f.signed.get(c) for f in forgeries for c in COMMANDS) if control else (
            caught == len(forgeries) and signed == 0
        )  # fmt: skip
        table.append([name, kinds.get(name, "-"), f"{caught}/{len(forgeries)}", *exits,
                      str(signed), "ok" if ok else "CHECK"])  # fmt: skip
    return table


HEADER = ["edit", "file", "audit caught", "review exit", "restore exit", "re-run exit",
          "newly signed", "row"]  # fmt: skip


def table(found: list[Forgery]) -> str:
    cells = rows(found)
    widths = [max(len(x) for x in column) for column in zip(HEADER, *cells, strict=True)]
    lines = [" | ".join(x.ljust(w) for x, w in zip(line, widths, strict=True))
             for line in [HEADER, *cells]]  # fmt: skip
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def totals(found: list[Forgery]) -> str:
    forged = [f for f in found if f.edit != CONTROL]
    kinds = len({f.edit for f in forged})
    caught = sum(f.caught for f in forged)
    signed = sum(f.newly_signed for f in forged)
    runs = sum(len(f.exits) for f in forged)
    missed = [f"{f.edit} ({f.variant})" for f in forged if not f.caught]
    control = [f for f in found if f.edit == CONTROL]
    seen = sum(f.newly_signed for f in control)
    lines = [
        f"{kinds} kinds of edit × {len(VARIANTS)} variants = {len(forged)} forgeries; "
        f"{runs} keyed commands run on them",
        f"caught by `faceoff audit --trust` (exit 5): {caught} of {len(forged)}",
        f"newly signed by review, restore and re-run: {signed}",
        f"control (no edit): {seen} new signatures from {sum(len(f.exits) for f in control)} "
        "commands (each command signs an intact bundle)",
    ]
    if missed:
        lines.append(f"missed: {', '.join(missed)}")
    return "\n".join(lines)


def details(found: list[Forgery]) -> str:
    """Per forgery, what each command said (its last line), for --verbose."""
    lines = []
    for f in found:
        lines.append(f"{f.edit} / {f.variant}: audit {f.audit}")
        lines += [f"    {c}: exit {f.exits[c]}, signed {f.signed[c]}: {f.said[c][:140]}"
                  for c in COMMANDS]  # fmt: skip
    return "\n".join(lines)


@contextlib.contextmanager
def prefect_server(root: Path) -> Iterator[dict[str, str]]:
    """One Prefect server for every re-run of the bench (each `faceoff run` would otherwise
    start its own, a minute apiece on this host)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    ephemeral.apply_prefect_defaults(environ, root)
    with ephemeral.ephemeral_server(environ, avoid=()) as _:
        yield {k: v for k, v in environ.items() if k.startswith("PREFECT_")}


def selected(names: list[str]) -> list[Edit]:
    known = {edit.name: edit for edit in EDITS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown edit(s) {', '.join(unknown)}; --list shows them")
    return [known[n] for n in names] if names else list(EDITS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", metavar="EDIT[,EDIT]", help="only these edits")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="variants, comma-separated (default: all four)")  # fmt: skip
    parser.add_argument("--list", action="store_true", help="list the edits and exit")
    parser.add_argument("--keep", type=Path, help="work under this folder and keep it")
    parser.add_argument("--verbose", action="store_true", help="each command's last line")
    parser.add_argument("--hostile-only", action="store_true",
                        help="only the hostile classes (tamper_hostile), no edits")  # fmt: skip
    args = parser.parse_args()
    if args.list:
        for edit in EDITS:
            print(f"  {edit.name:<34} {edit.kind:<22} {edit.what}")
        return
    edits = selected([n.strip() for n in args.only.split(",") if n.strip()])
    variants = [v.strip() for v in args.variants.split(",") if v.strip() in VARIANTS]
    with contextlib.ExitStack() as stack:
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tamper-")))
        root.mkdir(parents=True, exist_ok=True)
        prefect_env = stack.enter_context(prefect_server(root))
        start = time.monotonic()
        base = build(root, prefect_env)
        stack.callback(stop_listener, base.incumbent_port)
        print(f"campaign built and signed in {time.monotonic() - start:.0f} s", flush=True)
        hostile = hostile_rows(base.pristine / CAMPAIGN, base.public_key, root / "hostile",
                               base.env)  # fmt: skip
        print(f"\n{hostile_table(hostile)}\n{hostile_totals(hostile)}\n", flush=True)
        if args.hostile_only:
            return
        found = [forge(base, None, variants[0])]
        for edit in edits:
            for variant in variants:
                found.append(forge(base, edit, variant))
            print(table(found).splitlines()[-1], flush=True)  # the edit's row, as it comes
        print()
        print(table(found))
        print()
        print(totals(found))
        print(f"wall time {time.monotonic() - start:.0f} s")
        if args.verbose:
            print()
            print(details(found))


if __name__ == "__main__":
    main()
