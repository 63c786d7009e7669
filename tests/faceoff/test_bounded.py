"""Hostile bundles: special files where records should be, JSON nested a thousand deep, names
and lines far over any cap, folders nested 1,500 deep. Each ends in a finding and exit 5
within seconds, never a hang or a traceback; a generated hostile tree never raises.

A test of every reader of a bundle (audit, review, history), kept beside the bounded
reader they share: its caps on size, depth and file kinds are what it mainly asserts.
"""

from __future__ import annotations

import json
import os
import stat
import string
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.tamper_hostile import (
    DEEP,
    READER_CLASSES,
    fifo_at,
    nested_folders,
    unnest,
)
from evidence.audit.reverify import audit_bundle
from evidence.folder.layout import FROZEN_FILE, SUMS_FILE
from evidence.history.across_nights import NightRow, build_history
from faceoff.bounded import JSON_DEPTH, SUMS_CAP, Unreadable, depth_over, loads, read_bytes
from faceoff.credentials import NOBODY
from faceoff.exits import Exit
from faceoff.formats.bundle.manifest import MANIFEST_FILE
from faceoff.formats.bundle.reviews import REVIEWS_FILE
from faceoff.formats.history_cache import CACHE_FILE, SECRET_FILE
from faceoff.formats.receipt import RECEIPT_FILE
from flows.cli.history import real_auditor, sources
from ledger.campaigns import open_campaign
from ledger.cells import set_campaign_state
from ledger.db import open_ledger, resolve_url, session_scope
from tests.flows.cli.test_review import ledger_for
from tests.foundation.cli import faceoff


@pytest.mark.parametrize("name", sorted(READER_CLASSES))
def test_a_hostile_bundle_is_a_finding_with_exit_5_never_a_hang_or_traceback(
    name: str, bundle_copy: Callable[[], Path]
) -> None:
    root = bundle_copy()
    plant, named = READER_CLASSES[name]
    plant(root)
    try:
        done = faceoff("audit", str(root))
    finally:
        unnest(root)
    assert done.returncode == Exit.FINDINGS, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert named in done.stdout


@pytest.mark.parametrize("name", ["fifo-receipt", "fifo-reviews", "deep-review", "nested-folders"])
def test_a_review_of_a_hostile_bundle_refuses_in_one_line(
    name: str, bundle_copy: Callable[[], Path]
) -> None:
    """The review's seal check reads the same files: it refuses, it does not hang."""
    root = bundle_copy()
    ledger_for(root, "complete")
    READER_CLASSES[name][0](root)
    try:
        done = faceoff("review", "glm53-sim", "--workdir", str(root.parent), "--decision",
                       "no_promotion", "--note", "x", env={"USER": "carol"})  # fmt: skip
    finally:
        unnest(root)
    assert done.returncode == Exit.REFUSED, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "no longer matches" in done.stderr


def minimal(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / FROZEN_FILE).write_text("{}", encoding="utf-8")
    return root


def test_a_fifo_at_the_frozen_matrix_is_a_finding(tmp_path: Path) -> None:
    root = minimal(tmp_path / "b")
    (root / FROZEN_FILE).unlink()
    os.mkfifo(root / FROZEN_FILE)
    findings = [f.line for f in audit_bundle(root).findings]
    assert any(f.startswith(f"{FROZEN_FILE}: ") and "FIFO" in f for f in findings), findings


def test_sums_names_that_leave_the_bundle_are_findings_never_hashed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not the bundle's\n", encoding="utf-8")
    root = minimal(tmp_path / "b")
    lines = [f"{'0' * 64}  {outside}", f"{'0' * 64}  ../secret.txt"]
    (root / SUMS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    findings = [f.line for f in audit_bundle(root).findings]
    leaving = [f for f in findings if "leaves the bundle" in f]
    assert len(leaving) == 2, findings
    assert not any("sha256 is" in f for f in findings)  # neither was hashed


def test_the_reader_refuses_over_its_cap_by_size_alone(tmp_path: Path) -> None:
    big = tmp_path / "big"
    with big.open("wb") as handle:
        handle.truncate(SUMS_CAP + 1)
    with pytest.raises(Unreadable, match="over the"):
        read_bytes(big, SUMS_CAP)


def test_json_depth_is_capped_without_recursion() -> None:
    assert depth_over(DEEP.encode(), JSON_DEPTH)
    assert not depth_over(b'{"a": "' + b"[" * 70 + b'"}', 4)  # brackets in a string
    with pytest.raises(Unreadable, match="nested deeper"):
        loads(DEEP, "x.json")
    assert loads(json.dumps({"a": [[1]]}), "x.json") == {"a": [[1]]}


# A generated hostile tree: entries of every kind faceoff must never trip on.
KINDS = ("file", "fifo", "link", "dangling", "dir", "deep-json", "long-name", "nested", "big")
NAMES = st.text(string.ascii_lowercase + "._-", min_size=1, max_size=12).filter(
    lambda n: n not in (".", "..")
)
TARGETS = (FROZEN_FILE, RECEIPT_FILE, MANIFEST_FILE, REVIEWS_FILE, SUMS_FILE, "comparison.json")


def plant(root: Path, name: str, kind: str) -> None:
    path = root / name
    if os.path.lexists(path):
        return
    if kind == "file":
        path.write_text('{"signature": "sha256:x"}\n', encoding="utf-8")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind in ("link", "dangling"):
        path.symlink_to("/etc/hostname" if kind == "link" else root / "nowhere")
    elif kind == "dir":
        path.mkdir()
    elif kind == "deep-json":
        path.write_text(DEEP, encoding="utf-8")
    elif kind == "long-name":
        path.write_text(f"{'0' * 64}  {'n' * 5_000}\n", encoding="utf-8")
    elif kind == "nested":
        path.joinpath(*(["d"] * 60)).mkdir(parents=True)
    else:
        with path.open("wb") as handle:
            handle.truncate(SUMS_CAP + 1)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    entries=st.lists(
        st.tuples(st.one_of(st.sampled_from(TARGETS), NAMES), st.sampled_from(KINDS)),
        min_size=1,
        max_size=8,
    )
)
def test_an_audit_of_any_hostile_tree_ends_in_findings_never_an_exception(
    entries: list[tuple[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("hostile") / "bundle"
    root.mkdir()
    for name, kind in entries:
        plant(root, name, kind)
    if not os.path.lexists(root / FROZEN_FILE):
        (root / FROZEN_FILE).write_text("{}", encoding="utf-8")
    report = audit_bundle(root)
    assert not report.ok


def test_history_reports_a_hostile_night_as_bad_and_still_shows_the_others(
    bundle_copy: Callable[..., Path], tmp_path: Path
) -> None:
    good, bad = bundle_copy("good"), bundle_copy("bad")
    fifo_at("comparison.json")(bad)
    nested_folders(bad)
    workdir = tmp_path / "runs"
    engine = open_ledger(resolve_url(None, workdir))
    opened = datetime(2026, 11, 20, 1, 0, tzinfo=UTC)
    with session_scope(engine) as session:
        for name, bundle in (("night-good", good), ("night-bad", bad)):
            row, _ = open_campaign(
                session, name=name, matrix_id="m", evidence_dir=bundle, now=lambda: opened
            )
            set_campaign_state(session, row, status="complete", now=lambda: opened)
    try:
        found = sources(engine, workdir, since=None, credentials=NOBODY,
                        auditor=real_auditor(NOBODY))  # fmt: skip
    finally:
        unnest(bad)
    nights = {n.campaign: n for n in build_history(found, arm=None, cell=None, since=None).nights}
    assert nights["night-good"].in_trends and nights["night-good"].audit == "ok"
    assert nights["night-bad"].audit == "failed" and not nights["night-bad"].in_trends
    assert "FIFO" in (nights["night-bad"].problem or "")


def test_a_poisoned_history_cache_entry_is_a_failed_night_never_shown(
    bundle_copy: Callable[..., Path], tmp_path: Path
) -> None:
    bundle = bundle_copy("bundles")
    workdir = tmp_path / "runs"
    engine = open_ledger(resolve_url(None, workdir))
    opened = datetime(2026, 11, 20, 1, 0, tzinfo=UTC)
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session, name="night", matrix_id="m", evidence_dir=bundle, now=lambda: opened
        )
        set_campaign_state(session, row, status="complete", now=lambda: opened)

    def night() -> NightRow:
        found = sources(engine, workdir, since=None, credentials=NOBODY,
                        auditor=real_auditor(NOBODY))  # fmt: skip
        return build_history(found, arm=None, cell=None, since=None).nights[0]

    assert night().in_trends
    cache = workdir / CACHE_FILE
    assert stat.S_IMODE((cache.parent / SECRET_FILE).stat().st_mode) == 0o600
    data = json.loads(cache.read_text(encoding="utf-8"))
    [entry] = data["entries"].values()
    entry["night"]["p50"] = [p / 2 for p in entry["night"]["p50"]]  # a nicer TTFT p50
    cache.write_text(json.dumps(data), encoding="utf-8")
    poisoned = night()
    assert not poisoned.in_trends and poisoned.audit == "failed"
    assert "was altered (its MAC does not verify)" in (poisoned.problem or "")
    assert night().in_trends  # audited afresh from the bundle, its true figures
