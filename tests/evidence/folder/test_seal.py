"""A sealed bundle never changes afterwards, and is signed by the operator's key.

One workdir, two real simulated campaigns whose restored incumbents are host
processes left serving, as in production: the first incumbent keeps writing its
log after the seal; the second campaign's takeover stops it; ``faceoff
teardown`` stops the second one. Every file of both bundles is hashed at the
seal and after each step, and both still audit clean (signatures included).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from evidence.audit.reverify import audit_bundle
from evidence.bundle.write import write_bundle
from evidence.folder.layout import CampaignFolder
from evidence.folder.sums import write_sums
from faceoff.canonical import file_sha256
from faceoff.credentials import NOBODY, Credentials
from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import freeze
from faceoff.formats.host_facts import HostFacts, SourceFacts
from faceoff.formats.lane import BOOT_LOG_FILE, LANE_FILE, LaneRecord
from faceoff.formats.receipt import Receipt
from faceoff.signing import SIGNING_KEY_ENV
from flows.campaign.context import CampaignContext
from flows.campaign.takeover import take_over
from lanes.http import UrllibHttp
from lanes.lane_context import live_run_dir
from lanes.restoration import RestoreTools
from ledger.db import open_ledger, resolve_url
from matrix.model import Matrix
from tests.evidence.campaign import now, run_campaign
from tests.evidence.matrices import PLANTED_TOKEN, TOKEN_ENV, glm53_matrix
from tests.foundation.cli import faceoff
from tests.lanes.helpers import gone, kill_recorded_processes
from tests.shared_once import shared_once

KEY = "operator-signing-key-7f3a9c"
ONE_CELL = [
    {"id": "natural-2048-c1", "kind": "natural", "input_tokens": 2048, "concurrency": 1,
     "requests": 2, "sampling": {"max_tokens": 64}},
]  # fmt: skip
STATS_LINE = "INFO Engine 000: Avg prompt throughput: 3.1 tokens/s, Running: 0 reqs\n"
DEADLINE_S = 60.0


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, hidden ones included."""
    return {
        p.relative_to(root).as_posix(): file_sha256(p)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def renamed(matrix: Matrix, name: str) -> Matrix:
    data = matrix.model_dump(mode="json")
    data["campaign"]["name"] = name
    return Matrix.model_validate(data)


def restored_lane(bundle: Path) -> tuple[Path, LaneRecord]:
    run_dir = bundle / Receipt.read(bundle / "receipt.json").lane_run
    return run_dir, LaneRecord.read(run_dir / LANE_FILE)


def wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in {DEADLINE_S} s"
        time.sleep(0.05)


@dataclass
class Scenario:
    workdir: Path
    first: Path
    second: Path
    first_sealed: dict[str, str]
    second_sealed: dict[str, str]
    after_logging: dict[str, str]  # the first bundle after its incumbent kept logging
    logged: tuple[int, int]  # the live boot log's size at the seal and after the request
    stdout_target: str  # where the first incumbent's stdout points
    after_takeover: dict[str, str]  # the first bundle after the second campaign's takeover
    stopped_by_takeover: list[tuple[str, str, str]]  # (campaign, purpose, pid)
    after_teardown: tuple[dict[str, str], dict[str, str]]
    teardown_output: str


@pytest.fixture(scope="session")
def scenario(
    tmp_path_factory: pytest.TempPathFactory, host_facts: HostFacts, source_facts: SourceFacts
) -> Scenario:
    """Both campaigns played once per run (every xdist worker reads the same record); the
    played scenario leaves no lane running, and a failed one kills what it left."""

    def make(workdir: Path) -> Scenario:
        workdir.mkdir(parents=True)
        protected = workdir / "routes.yaml"
        protected.write_text("routes:\n  - llm.primary\n", encoding="utf-8")
        environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            TOKEN_ENV: PLANTED_TOKEN,
            SIGNING_KEY_ENV: KEY,
        }
        matrix = renamed(glm53_matrix([protected], ONE_CELL), "seal-first")
        try:
            return play(workdir, matrix, environ, host_facts, source_facts)
        finally:
            for campaign_dir in (workdir / "seal-first", workdir / "seal-second"):
                kill_recorded_processes(campaign_dir)

    return shared_once(tmp_path_factory, "seal-scenario", make)


def play(
    workdir: Path,
    matrix: Matrix,
    environ: dict[str, str],
    host: HostFacts,
    source: SourceFacts,
) -> Scenario:
    def seal(folder: Path) -> dict[str, str]:
        keyed = Credentials(hmac=KEY.encode())
        write_bundle(folder, now=lambda: datetime.now(UTC), host=host, source=source,
                     credentials=keyed)  # fmt: skip
        return tree(folder)

    first = run_campaign(workdir, matrix, environ, leave_incumbent=True)
    first_sealed = seal(first)

    # (a) the restored incumbent keeps writing: a request, then a stats line through its stdout
    run_dir, record = restored_lane(first)
    assert record.pid is not None
    live_log = live_run_dir(run_dir) / BOOT_LOG_FILE
    at_seal = live_log.stat().st_size
    engine_stdout_fd = Path(f"/proc/{record.pid}/fd/1")
    stdout_target = str(engine_stdout_fd.readlink())
    chat(record.base_url, matrix.incumbent.served_model)
    with engine_stdout_fd.open("a", encoding="utf-8") as engine_stdout:
        engine_stdout.write(STATS_LINE)  # what vLLM logs ~10 s after its last request
    wait_for(lambda: live_log.stat().st_size > at_seal, "the live boot log growing")
    after_logging = tree(first)

    # (c) a second campaign in the same workdir takes over, stopping the first's incumbent
    second_matrix = renamed(matrix, "seal-second")
    handoff = take_over(context_for(workdir, second_matrix, environ))
    wait_for(lambda: gone(int(record.pid or 0)), "the first incumbent gone")
    after_takeover = tree(first)
    second = run_campaign(workdir, second_matrix, environ, leave_incumbent=True)
    second_sealed = seal(second)

    # (b) faceoff teardown stops the second campaign's restored incumbent
    done = faceoff("teardown", "--workdir", str(workdir))
    assert done.returncode == 0, done.stdout + done.stderr
    return Scenario(
        workdir=workdir,
        first=first,
        second=second,
        first_sealed=first_sealed,
        second_sealed=second_sealed,
        after_logging=after_logging,
        logged=(at_seal, live_log.stat().st_size),
        stdout_target=stdout_target,
        after_takeover=after_takeover,
        stopped_by_takeover=[(s.campaign, s.purpose, s.ident) for s in handoff.stopped],
        after_teardown=(tree(first), tree(second)),
        teardown_output=done.stdout,
    )


def chat(base_url: str, model: str) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    request = urllib.request.Request(
        f"{base_url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=DEADLINE_S) as reply:
        assert reply.status == 200


def context_for(workdir: Path, matrix: Matrix, environ: dict[str, str]) -> CampaignContext:
    tools = RestoreTools(
        environ=environ, now=now, http=UrllibHttp(), docker=lambda: None, grace_s=5
    )
    engine = open_ledger(resolve_url(None, workdir))
    folder = workdir / matrix.campaign.name
    return CampaignContext(freeze(matrix), folder, workdir, engine, tools, None)


def audit_lines(bundle: Path, key: str | None = KEY) -> list[str]:
    report = audit_bundle(bundle, credentials=Credentials(hmac=key.encode()) if key else NOBODY)
    return [f.line for f in report.findings]


def test_a_restored_process_lane_logs_outside_its_sealed_bundle(scenario: Scenario) -> None:
    run_dir, _ = restored_lane(scenario.first)
    assert scenario.stdout_target == str(live_run_dir(run_dir) / BOOT_LOG_FILE)
    assert not scenario.stdout_target.startswith(str(scenario.first) + "/")
    at_seal, later = scenario.logged
    assert later > at_seal  # the engine's log did grow after the seal
    assert scenario.after_logging == scenario.first_sealed
    assert "Application startup complete" in (run_dir / BOOT_LOG_FILE).read_text()
    assert audit_lines(scenario.first) == []


def test_a_later_campaigns_takeover_leaves_the_earlier_bundle_byte_identical(
    scenario: Scenario,
) -> None:
    _, record = restored_lane(scenario.first)
    assert ("seal-first", "restore", str(record.pid)) in scenario.stopped_by_takeover
    assert scenario.after_takeover == scenario.first_sealed
    assert "handoffs/handoff-001.json" in scenario.second_sealed
    run_dir, _ = restored_lane(scenario.first)
    noted = LaneRecord.read(live_run_dir(run_dir) / LANE_FILE)
    assert noted.state == "stopped"  # the stop is recorded, outside the bundle


def test_teardown_leaves_every_sealed_bundle_byte_identical(scenario: Scenario) -> None:
    _, record = restored_lane(scenario.second)
    assert f"seal-second: stopped process {record.pid}" in scenario.teardown_output
    assert gone(int(record.pid or 0))
    first, second = scenario.after_teardown
    assert first == scenario.first_sealed
    assert second == scenario.second_sealed
    assert tree(scenario.first) == scenario.first_sealed
    assert audit_lines(scenario.first) == [] and audit_lines(scenario.second) == []


def test_receipts_and_sums_are_signed_and_the_audit_checks_the_key(scenario: Scenario) -> None:
    receipt = Receipt.read(scenario.first / "receipt.json")
    assert receipt.signature is not None and receipt.bound_files
    for path in scenario.first.rglob("*"):
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path
    wrong = audit_lines(scenario.first, key="not-the-operators-key")
    mismatch = f"signature does not match under the given {SIGNING_KEY_ENV} (wrong key, or forged)"
    assert wrong == [f"SHA256SUMS.hmac: {mismatch}", f"receipt.json: signature: {mismatch}"]
    unkeyed = audit_bundle(scenario.first)
    assert unkeyed.ok
    signature_notes = [n for n in unkeyed.notes if "signature" in n]
    assert signature_notes == [
        "signatures were not checked: HMAC-signed (shared secret): verifiable only with "
        f"{SIGNING_KEY_ENV}"
    ]
    keyed = faceoff("audit", str(scenario.first), env={SIGNING_KEY_ENV: KEY})
    assert keyed.returncode == 0 and "not checked" not in keyed.stdout
    plain = faceoff("audit", str(scenario.first))
    assert plain.returncode == 0
    skipped = (
        "[skip] signatures of the bundle, the receipt and the reviews (0) — HMAC-signed (shared "
        f"secret): verifiable only with {SIGNING_KEY_ENV}"
    )
    assert skipped in plain.stdout and "[ok  ] signatures" in keyed.stdout


def test_a_forged_receipt_with_a_recomputed_hash_fails_the_keyed_audit(
    scenario: Scenario, tmp_path: Path
) -> None:
    copy = tmp_path / scenario.first.name
    shutil.copytree(scenario.first, copy)
    receipt = Receipt.read(copy / "receipt.json")
    forged = receipt.model_copy(update={"attempt": 7}).sealed()  # self-hash redone, no key
    forged.write(copy / "receipt.json", replace=True)
    found = audit_lines(copy)
    assert "receipt.json: signature: signature does not match" in " ".join(found)


def test_a_manifest_edited_with_its_sums_line_fails_the_keyed_audit_and_rebuild(
    scenario: Scenario, tmp_path: Path, host_facts: HostFacts, source_facts: SourceFacts
) -> None:
    copy = tmp_path / scenario.first.name
    shutil.copytree(scenario.first, copy)
    seal = (copy / "SHA256SUMS.hmac").read_bytes()
    manifest = json.loads((copy / "MANIFEST.json").read_text())
    manifest["host"]["hostname"] = "the-audited-host"  # host facts cannot be recomputed
    (copy / "MANIFEST.json").write_text(json.dumps(manifest, indent=2))
    write_sums(CampaignFolder(copy))  # sums redone without the key, the signature deleted
    (copy / "SHA256SUMS.hmac").unlink()
    stripped = [f.line for f in audit_bundle(copy).findings]  # the receipt says it was signed
    assert stripped[0].startswith(
        "SHA256SUMS.hmac: missing, although receipt.json records a signature"
    )
    assert audit_lines(copy)[0] == stripped[0]
    (copy / "SHA256SUMS.hmac").write_bytes(seal)  # the old signature put back
    assert audit_lines(copy)[0].startswith("SHA256SUMS.hmac: signature does not match")
    with pytest.raises(FaceoffError, match=r"SHA256SUMS\.hmac: signature does not match"):
        write_bundle(
            copy, now=lambda: datetime.now(UTC), host=host_facts, source=source_facts,
            credentials=Credentials(hmac=KEY.encode()),
        )  # fmt: skip
    assert (copy / "SHA256SUMS.hmac").read_bytes() == seal
