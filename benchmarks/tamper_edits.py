"""The edits of ``benchmarks.tamper``: one forger's change per kind of file in a bundle.

Each edit changes the bundle of ``benchmarks.tamper``'s campaign in place, as a forger
with the bundle and faceoff's own code (but not the operator's private key) would: where
a file is derived from others (a summary, a verdict, the comparison, the card), the
derived files are written again from the forged ones with faceoff's own functions, so
that nothing but the seal, the receipt's binding and the signatures can tell.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from evidence.folder.layout import ENVELOPE_FILE, SEAL_FILE, SEAL_LAYOUT, SUMS_FILE, CampaignFolder
from evidence.folder.sums import write_sums
from faceoff.canonical import file_sha256
from faceoff.formats.bundle.reviews import GENESIS, Decision, read_reviews
from faceoff.formats.receipt import Receipt
from faceoff.keys import PublicKey, SigningKey
from faceoff.seal_envelope import seal_bundle
from faceoff.signing import sign
from faceoff.trust import HMAC_SIGNER
from tests.evidence.forgery import recompute_attempt, recompute_views, shave_ttft

CELL = "cells/natural-8192-c1"
CAND = f"{CELL}/nvfp4-r2/attempt-1"  # the candidate's accepted attempt
INC = f"{CELL}/exl3-r11/attempt-1"
FAILED = "cells/controlled-8192-c1/nvfp4-r2/attempt-1"  # failed: contract overrun
LANE = "lanes/exl3-r11/campaign-001"
RESTORE_LANE = "lanes/exl3-r11/restore-001"


@dataclass(frozen=True)
class Edit:
    name: str
    kind: str  # the kind of file it changes
    what: str
    apply: Callable[[Path], None]


# -- how a value, a JSON file, a line or a text is forged ------------------------------


def forged(value: Any) -> Any:
    """A plausible different value of the same type."""
    if isinstance(value, bool | int | float | str):
        return _forged_scalar(value)
    if isinstance(value, list):
        return [forged(value[0]), *value[1:]] if value else ["forged"]
    if isinstance(value, dict):
        key = next(iter(value), None)
        return {**value, key: forged(value[key])} if key is not None else {"forged": 1}
    return "forged"


def _forged_scalar(value: bool | int | float | str) -> bool | int | float | str:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 0.9 + 0.001
    return value[:-1] + ("0" if value[-1:] != "0" else "1") if value else "forged"


def set_json(path: str, keys: tuple[str | int, ...], value: Any = None) -> Callable[[Path], None]:
    """Replace the value at ``keys`` of a JSON file (``forged`` of it unless ``value``)."""

    def apply(root: Path) -> None:
        data = json.loads((root / path).read_text(encoding="utf-8"))
        inner = data
        for key in keys[:-1]:
            inner = inner[key]
        inner[keys[-1]] = forged(inner[keys[-1]]) if value is None else value
        (root / path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    return apply


def set_line(path: str, index: int, key: str) -> Callable[[Path], None]:
    """Forge one field of one line of a JSON-lines file."""

    def apply(root: Path) -> None:
        lines = (root / path).read_text(encoding="utf-8").splitlines()
        line = json.loads(lines[index])
        line[key] = forged(line[key])
        lines[index] = json.dumps(line, separators=(",", ":"))
        (root / path).write_text("\n".join(lines) + "\n", encoding="utf-8")

    return apply


def drop_line(path: str, index: int) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        lines = (root / path).read_text(encoding="utf-8").splitlines()
        del lines[index]
        (root / path).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")

    return apply


def replace_text(path: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        text = (root / path).read_text(encoding="utf-8")
        if old not in text:
            raise ValueError(f"{path} holds no {old!r} to forge")
        (root / path).write_text(text.replace(old, new, 1), encoding="utf-8")

    return apply


def append_text(path: str, text: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        with (root / path).open("a", encoding="utf-8") as out:
            out.write(text)

    return apply


def then_recompute(edit: Callable[[Path], None], *attempts: str) -> Callable[[Path], None]:
    """The edit, then the attempts' summaries and verdicts and the views written again."""

    def apply(root: Path) -> None:
        edit(root)
        for attempt in attempts:
            recompute_attempt(root, attempt)
        recompute_views(root)

    return apply


# -- edits that need more than a field ------------------------------------------------


def shaved(attempt: str, shave_ns: int) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        shave_ttft(root, attempt, shave_ns)
        recompute_views(root)

    return apply


def shaved_only(root: Path) -> None:
    """The journal alone: its summary and verdict left to disagree."""
    path = root / CAND / "journal.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    line = json.loads(lines[0])
    line["first_content_ns"] -= 20_000_000
    lines[0] = json.dumps(line, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def duplicated_line(root: Path) -> None:
    path = root / CAND / "journal.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")


def more_tokens(root: Path) -> None:
    path = root / CAND / "journal.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    line = json.loads(lines[0])
    line["usage"]["completion_tokens"] += 40
    lines[0] = json.dumps(line, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def verdict_accepted(root: Path) -> None:
    """The failed controlled cell's verdict says accepted; the views follow it."""
    path = root / FAILED / "verdict.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data |= {"disposition": "accepted", "reason": "accepted", "sentence": "every rule passed"}
    data["rules"] = [r | {"outcome": "passed"} for r in data["rules"]]
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    recompute_views(root)


def receipt_resealed(root: Path) -> None:
    """The receipt's smoke says more passed, its own hash computed again (the signature is
    left: it no longer signs this hash)."""
    path = root / "receipt.json"
    receipt = Receipt.read(path)
    assert receipt.smoke is not None
    smoke = receipt.smoke.model_copy(update={"passed": receipt.smoke.total + 1})
    receipt.model_copy(update={"smoke": smoke}).sealed().write(path, replace=True)


def review_forged(decision: Decision) -> Callable[[Path], None]:
    """A review appended as faceoff chains one (own hash, chain), unsigned."""

    def apply(root: Path) -> None:
        records = read_reviews(root)
        last = records[-1]
        record = last.model_copy(
            update={"decision": decision, "note": "approved after review", "reviewer": "cto",
                    "previous_sha256": last.record_sha256 if records else GENESIS,
                    "signature": None},
        ).sealed()  # fmt: skip
        with (root / "reviews.jsonl").open("a", encoding="utf-8") as out:
            out.write(record.model_dump_json() + "\n")

    return apply


def review_rewritten(root: Path) -> None:
    """The recorded decision changed, the record's own hash computed again."""
    path = root / "reviews.jsonl"
    record = read_reviews(root)[0]
    changed = record.model_copy(update={"decision": Decision.PROMOTE}).sealed()
    path.write_text(changed.model_dump_json() + "\n", encoding="utf-8")


def forger_key() -> SigningKey:
    private = Ed25519PrivateKey.generate()
    return SigningKey(private, PublicKey.of(private.public_key()))


def sealed_by_forger(root: Path) -> None:
    """Host facts forged, then the whole bundle sealed by the forger's own key."""
    set_json("MANIFEST.json", ("host", "hostname"), "gpu-prod-7")(root)
    write_sums(CampaignFolder(root))
    manifest = json.loads((root / "MANIFEST.json").read_text(encoding="utf-8"))
    seal_bundle(root, SEAL_LAYOUT, forger_key(), campaign=manifest["campaign"],
                matrix_id=manifest["matrix_id"], sealed="bundle")  # fmt: skip


def hmac_downgrade(root: Path) -> None:
    """The Ed25519 seal swapped for an HMAC of the sums under a secret of the forger's."""
    (root / ENVELOPE_FILE).unlink()
    digest = file_sha256(root / SUMS_FILE)
    (root / SEAL_FILE).write_text(sign(b"forger's secret", digest) + "\n", encoding="utf-8")


def resigned_with_secret(root: Path) -> None:
    """Host facts forged, then every signature made again under the forger's own shared
    secret: the receipt's, the reviews', the manifest's signer, the seal as an HMAC."""
    secret = b"the forger's own secret"
    manifest = json.loads((root / "MANIFEST.json").read_text(encoding="utf-8"))
    manifest["host"]["hostname"] = "gpu-prod-7"
    manifest["signer"] = HMAC_SIGNER
    (root / "MANIFEST.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    receipt = Receipt.read(root / "receipt.json")
    signature = sign(secret, receipt.receipt_sha256)
    receipt.model_copy(update={"signature": signature}).write(root / "receipt.json", replace=True)
    records = [
        r.model_copy(update={"signature": sign(secret, r.record_sha256)})
        for r in read_reviews(root)
    ]
    (root / "reviews.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    (root / ENVELOPE_FILE).unlink()
    write_sums(CampaignFolder(root))
    (root / SEAL_FILE).write_text(sign(secret, file_sha256(root / SUMS_FILE)) + "\n")


def envelope_subject(root: Path) -> None:
    """The seal's statement names another sha256 for the journal (payload edited)."""
    path = root / ENVELOPE_FILE
    envelope = json.loads(path.read_text(encoding="utf-8"))
    statement = json.loads(base64.b64decode(envelope["payload"]))
    for subject in statement["subject"]:
        if subject["name"].endswith(f"{CAND}/journal.jsonl"):
            subject["digest"]["sha256"] = "0" * 64
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(envelope), encoding="utf-8")


def moved(source: str, target: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / source).rename(root / target)

    return apply


def swapped(a: str, b: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / a).rename(root / f"{a}.swap")
        (root / b).rename(root / a)
        (root / f"{a}.swap").rename(root / b)

    return apply


def deleted(path: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        target = root / path
        shutil.rmtree(target) if target.is_dir() else target.unlink()

    return apply


def added(path: str, text: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")

    return apply


def second_attempt(root: Path) -> None:
    """A fabricated attempt 2 of the candidate: attempt 1 copied, its TTFT shaved."""
    target = CAND.replace("attempt-1", "attempt-2")
    shutil.copytree(root / CAND, root / target)
    shave_ttft(root, target, 40_000_000)
    recompute_views(root)


def symlinked(root: Path) -> None:
    """A file replaced by a link to a copy outside the bundle (same bytes, for now)."""
    path = root / CAND / "summary.json"
    outside = root.parent / "outside-summary.json"
    shutil.copyfile(path, outside)
    path.unlink()
    path.symlink_to(outside)


def emptied(path: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / path).write_bytes(b"")

    return apply


EDITS: list[Edit] = [
    # the manifest's facts
    Edit(
        "manifest_hostname",
        "MANIFEST.json",
        "host facts: the hostname",
        set_json("MANIFEST.json", ("host", "hostname"), "gpu-prod-7"),
    ),
    Edit(
        "manifest_cpu",
        "MANIFEST.json",
        "host facts: the CPU",
        set_json("MANIFEST.json", ("host", "cpu")),
    ),
    Edit(
        "manifest_signer",
        "MANIFEST.json",
        "signer removed (claims an unsigned bundle)",
        set_json("MANIFEST.json", ("signer",), ""),
    ),
    Edit(
        "manifest_version",
        "MANIFEST.json",
        "faceoff's version",
        set_json("MANIFEST.json", ("version",)),
    ),
    Edit(
        "manifest_arm",
        "MANIFEST.json",
        "an arm's recorded recipe",
        set_json("MANIFEST.json", ("arms", 1)),
    ),
    # the frozen matrix
    Edit(
        "frozen_threshold",
        "matrix.frozen.json",
        "a validity threshold loosened",
        set_json("matrix.frozen.json", ("matrix", "thresholds", "max_error_rate"), 0.5),
    ),
    Edit(
        "frozen_arm",
        "matrix.frozen.json",
        "the candidate's served model",
        set_json("matrix.frozen.json", ("matrix", "arms", 1, "served_model")),
    ),
    # journals and what is recomputed from them
    Edit(
        "journal_ttft_shaved",
        "journal.jsonl",
        "20 ms off a candidate TTFT; summary, verdict, views recomputed",
        shaved(CAND, 20_000_000),
    ),
    Edit("journal_ttft_raw", "journal.jsonl", "20 ms off a TTFT, nothing recomputed", shaved_only),
    Edit(
        "journal_incumbent_slowed",
        "journal.jsonl",
        "the incumbent's TTFT 30 ms longer; recomputed",
        shaved(INC, -30_000_000),
    ),
    Edit(
        "journal_line_deleted",
        "journal.jsonl",
        "a slow request's line removed; recomputed",
        then_recompute(drop_line(f"{CAND}/journal.jsonl", -1), CAND),
    ),
    Edit(
        "journal_line_duplicated",
        "journal.jsonl",
        "a line journaled twice; recomputed",
        then_recompute(duplicated_line, CAND),
    ),
    Edit(
        "journal_tokens",
        "journal.jsonl",
        "40 more completion tokens; recomputed",
        then_recompute(more_tokens, CAND),
    ),
    Edit(
        "journal_emptied",
        "journal.jsonl",
        "the failed cell's journal emptied; recomputed",
        then_recompute(emptied(f"{FAILED}/journal.jsonl"), FAILED),
    ),
    Edit(
        "plan_prompt_hash",
        "requests.json",
        "a planned prompt's sha256",
        set_json(f"{CAND}/requests.json", ("requests", 0, "prompt_sha256")),
    ),
    Edit(
        "plan_target",
        "requests.json",
        "a planned input length",
        set_json(f"{CAND}/requests.json", ("requests", 0, "target_input_tokens")),
    ),
    # samples and scrapes
    Edit(
        "engine_sample_deleted",
        "engine.jsonl",
        "a sample that missed its tick removed",
        drop_line(f"{CAND}/engine.jsonl", 1),
    ),
    Edit(
        "engine_sample_changed",
        "engine.jsonl",
        "a sample's scrape latency",
        set_line(f"{CAND}/engine.jsonl", 0, "latency_ns"),
    ),
    Edit(
        "host_sample_changed",
        "host.jsonl",
        "host memory of a sample",
        set_line(f"{CAND}/host.jsonl", 0, "host_available_bytes"),
    ),
    Edit(
        "stalls_deleted",
        "stalls.jsonl",
        "the stall monitor's record emptied",
        emptied(f"{CAND}/stalls.jsonl"),
    ),
    Edit(
        "scrape_counter",
        "scrape-last.txt",
        "a counter of the last scrape",
        replace_text(f"{CAND}/scrape-last.txt", "} 0.0", "} 1.0"),
    ),
    Edit(
        "scrape_first_cut",
        "scrape-first.txt",
        "the first scrape emptied",
        emptied(f"{CAND}/scrape-first.txt"),
    ),
    Edit(
        "client_log",
        "client.log",
        "a line added to the client's output",
        append_text(f"{CAND}/client.log", "all requests ok\n"),
    ),
    # an attempt's records
    Edit(
        "cell_window", "cell.json", "the cell's window", set_json(f"{CAND}/cell.json", ("window",))
    ),
    Edit(
        "cell_deadline",
        "cell.json",
        "whether the failed cell hit its deadline",
        set_json(f"{FAILED}/cell.json", ("deadline_hit",)),
    ),
    Edit(
        "telemetry",
        "telemetry.json",
        "an engine figure of the summary",
        set_json(f"{CAND}/telemetry.json", ("engine",)),
    ),
    Edit(
        "summary_metric",
        "summary.json",
        "a TTFT statistic",
        set_json(f"{CAND}/summary.json", ("metrics", "ttft_s")),
    ),
    Edit(
        "verdict_accepted",
        "verdict.json",
        "the failed cell accepted; views recomputed",
        verdict_accepted,
    ),
    Edit(
        "verdict_sentence",
        "verdict.json",
        "the verdict's sentence",
        set_json(f"{CAND}/verdict.json", ("sentence",)),
    ),
    # the views
    Edit(
        "comparison_cell",
        "comparison.json",
        "a cell's entry",
        set_json("comparison.json", ("cells", 0)),
    ),
    Edit(
        "comparison_totals",
        "comparison.json",
        "the totals",
        set_json("comparison.json", ("totals",)),
    ),
    Edit(
        "card_text", "RESULT.md", "the card's words", replace_text("RESULT.md", "failed", "passed")
    ),
    Edit(
        "report_text",
        "report.html",
        "the report's words",
        replace_text("report.html", "failed", "passed"),
    ),
    # the receipt
    Edit(
        "receipt_pid",
        "receipt.json",
        "the restored incumbent's pid",
        set_json("receipt.json", ("pid",)),
    ),
    Edit(
        "receipt_resealed",
        "receipt.json",
        "smoke figures, the receipt's hash recomputed",
        receipt_resealed,
    ),
    Edit(
        "receipt_unsigned",
        "receipt.json",
        "the receipt's signature removed",
        set_json("receipt.json", ("signature",), None),
    ),
    Edit(
        "receipt_binding",
        "receipt.json",
        "a bound file's sha256",
        set_json("receipt.json", ("bound_files", f"{CAND}/journal.jsonl"), "0" * 64),
    ),
    # reviews
    Edit(
        "review_decision",
        "reviews.jsonl",
        "the decision, its record hashed again",
        review_rewritten,
    ),
    Edit(
        "review_appended",
        "reviews.jsonl",
        "a promote decision chained as faceoff does, unsigned",
        review_forged(Decision.PROMOTE),
    ),
    Edit("review_removed", "reviews.jsonl", "the reviews removed", deleted("reviews.jsonl")),
    # tickets
    Edit(
        "ticket_text",
        "tickets/*.md",
        "the ticket's words",
        replace_text("tickets/tamper-demo-failed-contract-overrun.md", "failed", "passed"),
    ),
    Edit(
        "ticket_index",
        "tickets/index.json",
        "the index",
        set_json("tickets/index.json", ("tickets",), []),
    ),
    # lanes
    Edit(
        "lane_command",
        "lane.json",
        "the lane's recorded command",
        set_json(f"{LANE}/lane.json", ("command",)),
    ),
    Edit(
        "boot_log_quantization",
        "boot.log",
        "the quantization line",
        replace_text(f"{LANE}/boot.log", "quantization=exl3", "quantization=fp8"),
    ),
    Edit(
        "identity",
        "identity.json",
        "the identity verdict",
        set_json(f"{LANE}/identity.json", ("verdict",)),
    ),
    Edit(
        "warmup_journal",
        "warmup/journal.jsonl",
        "a warmup's status",
        set_line(f"{LANE}/warmup/journal.jsonl", 0, "status"),
    ),
    Edit(
        "restore_lane",
        "lane.json",
        "the restore lane's pid",
        set_json(f"{RESTORE_LANE}/lane.json", ("pid",)),
    ),
    # other records
    Edit(
        "protected_before",
        "protected.before.json",
        "a protected file's sha256 before",
        set_json("protected.before.json", ("files", 0)),
    ),
    Edit(
        "preflight",
        "preflight/*.json",
        "a check's finding",
        set_json("preflight/preflight-001.json", ("checks", 0, "finding")),
    ),
    Edit(
        "handoff",
        "handoffs/*.json",
        "what the take-over stopped",
        set_json("handoffs/handoff-001.json", ("incumbent",)),
    ),
    Edit(
        "posture",
        "posture/*.json",
        "the host's posture",
        set_json("posture/start.json", ("swappiness",)),
    ),
    # files added, deleted, renamed
    Edit(
        "added_top_file", "(added)", "APPROVAL.txt at the top", added("APPROVAL.txt", "approved\n")
    ),
    Edit("added_top_dotfile", "(added)", ".approved at the top", added(".approved", "yes\n")),
    Edit(
        "added_attempt_dotfile",
        "(added)",
        "a dot-file in an attempt",
        added(f"{CAND}/.hidden", "x\n"),
    ),
    Edit(
        "added_attempt_file",
        "(added)",
        "an extra file in an attempt",
        added(f"{CAND}/extra.json", "{}\n"),
    ),
    Edit(
        "added_attempt",
        "(added)",
        "a fabricated attempt 2, TTFT shaved; views recomputed",
        second_attempt,
    ),
    Edit("deleted_journal", "(deleted)", "a journal", deleted(f"{FAILED}/journal.jsonl")),
    Edit("deleted_verdict", "(deleted)", "a verdict", deleted(f"{FAILED}/verdict.json")),
    Edit("deleted_receipt", "(deleted)", "the receipt", deleted("receipt.json")),
    Edit(
        "deleted_attempt",
        "(deleted)",
        "the failed attempt's folder; views recomputed",
        then_recompute(deleted("cells/controlled-8192-c1")),
    ),
    Edit(
        "renamed_attempt",
        "(renamed)",
        "attempt-1 → attempt-2",
        moved(CAND, CAND.replace("attempt-1", "attempt-2")),
    ),
    Edit(
        "renamed_journal",
        "(renamed)",
        "journal.jsonl → journal.jsonl.bak",
        moved(f"{CAND}/journal.jsonl", f"{CAND}/journal.jsonl.bak"),
    ),
    Edit(
        "swapped_journals",
        "(renamed)",
        "the two arms' journals swapped",
        swapped(f"{CAND}/journal.jsonl", f"{INC}/journal.jsonl"),
    ),
    Edit("symlinked_summary", "(link)", "summary.json a link to a copy outside", symlinked),
    # the seal itself
    Edit("sums_line_removed", "SHA256SUMS", "a line of the sums removed", drop_line(SUMS_FILE, 0)),
    Edit(
        "envelope_subject",
        "SEAL.dsse.json",
        "the statement's sha256 of a journal",
        envelope_subject,
    ),
    Edit(
        "sealed_by_forger",
        "SEAL.dsse.json",
        "host facts forged, sealed with another key",
        sealed_by_forger,
    ),
    Edit(
        "hmac_downgrade",
        "SHA256SUMS.hmac",
        "the seal swapped for an HMAC of another secret",
        hmac_downgrade,
    ),
    Edit(
        "resigned_with_secret",
        "(every signature)",
        "host facts forged; every signature made again with the forger's secret",
        resigned_with_secret,
    ),
]
