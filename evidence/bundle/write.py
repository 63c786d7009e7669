"""``write_bundle``: turn a campaign folder into its evidence bundle, in place.

It reads only the folder, so a bundle can be rebuilt from native artifacts alone at any
time, and starts and stops nothing. The one thing it removes: kept fidelity windows that
their arm's ``scores.npz`` already holds (a run killed between writing it and removing
them); an unscored arm's stay, sealed, named as partial scoring. ``SHA256SUMS`` is
written last: the seal. Rewriting is refused when the sealed bundle no longer verifies
(the new sums would launder the change); a resumed campaign run reopens its bundle first
(``reopen_bundle``). The order of writes and the seal: docs/evidence.md, "Entry points"
and "The seal".
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from evidence.attempt.summary import cell_slo, summarize_attempt
from evidence.comparison.build import CellEntries, build_comparison, cells_with_attempts
from evidence.comparison.coverage import bad_runs
from evidence.comparison.fidelity.entries import scored_leftovers
from evidence.comparison.quality import import_quality
from evidence.comparison.read import CampaignInputs, load_campaign
from evidence.folder.layout import REPORT_FILE, RESULT_FILE, SUMS_FILE, AttemptDir, CampaignFolder
from evidence.folder.seal import lift_seal, require_verified, seal
from evidence.views.card.render import render_card
from faceoff.credentials import NOBODY, Credentials
from faceoff.cycles import cycle_collection_paused
from faceoff.files import write_text_atomic
from faceoff.forked import forked_map, workers
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.request_plan import PLAN_NAME
from faceoff.formats.attempt.summary import SUMMARY_FILE, RequestSummary
from faceoff.formats.bundle.comparison import COMPARISON_FILE, CellEntry, Comparison
from faceoff.formats.bundle.manifest import MANIFEST_FILE, manifest
from faceoff.formats.bundle.reviews import read_reviews
from faceoff.formats.frozen_matrix import read_frozen
from faceoff.formats.host_facts import HostFacts, SourceFacts
from faceoff.ports import Clock
from tickets.cluster import cluster
from tickets.store import write_tickets
from workload.journal import read_journal


@dataclass(frozen=True)
class BundleIndex:
    """What was written, for the flow and the CLI to report."""

    root: Path
    comparison: Comparison
    files: dict[str, Path]  # artifact name -> path


@cycle_collection_paused()
def summaries_and_cells(inputs: CampaignInputs) -> list[CellEntry]:
    """summary.json of every attempt that has a plan and a journal (recomputed, replaced),
    and the comparison's cell entries, cell by cell: a cell's entry is built right after its
    summaries, while its journals and plans are the ones kept (``faceoff.recent``), and
    from those fresh summaries (``inputs`` is updated with them). Cells are written in
    forked workers where that is safe (``faceoff.forked``), as the audit checks them."""
    entries = CellEntries(inputs)
    walk = list(cells_with_attempts(entries.cell_ids, inputs.folder.attempts()))
    job = _CellWriter(inputs, entries, walk)
    built = []
    for written in forked_map(job.write, len(walk), workers(len(walk))):
        for summary_of in written.summaries:
            _stand(inputs, *summary_of)
        if written.entry is not None:
            built.append(written.entry)
    return built


@dataclass(frozen=True)
class _CellWritten:
    """What writing one cell made (it crosses back from a worker process)."""

    summaries: list[tuple[AttemptDir, RequestSummary]]
    entry: CellEntry | None


@dataclass(frozen=True)
class _CellWriter:
    inputs: CampaignInputs
    entries: CellEntries
    walk: list[tuple[str | None, list[AttemptDir]]]  # ``cells_with_attempts``

    def write(self, index: int) -> _CellWritten:
        cell_id, attempts = self.walk[index]
        summaries = [(a, s) for a in attempts if (s := _write_summary(self.inputs, a))]
        for summary_of in summaries:  # this cell's entry is built from them
            _stand(self.inputs, *summary_of)
        if cell_id is None:
            return _CellWritten(summaries, None)
        return _CellWritten(summaries, self.entries.of(cell_id))


def _write_summary(inputs: CampaignInputs, attempt: AttemptDir) -> RequestSummary | None:
    if not ((attempt.path / PLAN_NAME).is_file() and (attempt.path / JOURNAL_NAME).is_file()):
        return None
    slo = cell_slo(inputs.frozen.matrix, attempt.cell_id)
    journal = read_journal(attempt.path / JOURNAL_NAME)
    summary = summarize_attempt(
        attempt.path, arm=attempt.arm, attempt=attempt.attempt, slo=slo, journal=journal
    )
    summary.write(attempt.path / SUMMARY_FILE, replace=True)
    return summary


def _stand(inputs: CampaignInputs, attempt: AttemptDir, summary: RequestSummary) -> None:
    """The standing attempt of its cell and arm gets its fresh summary."""
    standing = inputs.attempts.get((attempt.cell_id, attempt.arm))
    if standing is not None and standing.where == attempt:
        inputs.attempts[(attempt.cell_id, attempt.arm)] = replace(standing, summary=summary)


def comparison_of(inputs: CampaignInputs, cells: Sequence[CellEntry] | None = None) -> Comparison:
    """The comparison the folder implies, reviews included (what audit recomputes);
    ``cells``: its cell entries, when the caller built them already."""
    reviews = [r.ref() for r in read_reviews(inputs.folder.root)]
    return build_comparison(inputs, reviews=reviews, cells=cells)


def write_bundle(
    campaign_dir: Path,
    *,
    now: Clock,
    host: HostFacts,
    source: SourceFacts,
    credentials: Credentials = NOBODY,
) -> BundleIndex:
    """The whole bundle, sealed and signed with ``credentials``."""
    folder = CampaignFolder.at(campaign_dir)
    require_verified(folder, credentials)
    for leftover in scored_leftovers(folder.root):  # scores.npz holds them: no second copy
        shutil.rmtree(leftover)
    import_quality(folder.root, read_frozen(folder.frozen).matrix.quality)
    inputs = load_campaign(folder)
    comparison = comparison_of(inputs, summaries_and_cells(inputs))
    write_campaign_tickets(folder, comparison, now)
    files = write_views(folder, comparison, inputs)
    files[MANIFEST_FILE] = manifest(
        campaign=comparison.campaign,
        matrix_id=comparison.matrix_id,
        arms=comparison.arms,
        host=host,
        source=source,
        written_at=now(),
        posture=comparison.posture,
        signer=credentials.signer,
        waived=comparison.waivers,
    ).write(folder.path(MANIFEST_FILE), replace=True)
    files[SUMS_FILE] = _sealed(folder, comparison, credentials, now)
    return BundleIndex(root=folder.root, comparison=comparison, files=files)


def _sealed(
    folder: CampaignFolder,
    comparison: Comparison,
    credentials: Credentials,
    now: Clock = lambda: datetime.now(UTC),
) -> Path:
    return seal(folder, credentials, campaign=comparison.campaign, matrix_id=comparison.matrix_id,
                now=now)  # fmt: skip


def reopen_bundle(campaign_dir: Path, credentials: Credentials, *, sealed: bool) -> None:
    """Before a run or a restoration adds to a bundle: prove it intact and its signature
    valid with ``credentials``, then lift the seal; the closing seals it again. ``sealed``:
    the ledger says the campaign closed, so a bundle without its seal was stripped. A
    bundle that does not verify is refused (``FaceoffError``) and left as it is, so that
    its audit and the next run still name what changed; it is never signed again."""
    folder = CampaignFolder.at(campaign_dir)
    require_verified(folder, credentials, sealed=sealed)
    lift_seal(folder)


def refresh_views(folder: CampaignFolder, credentials: Credentials = NOBODY) -> BundleIndex:
    """Rebuild comparison.json, RESULT.md, report.html and the seal after a review or a
    restoration.

    The caller has proven the bundle intact and its signature valid first
    (``require_verified``), before it added to it.
    """
    inputs = load_campaign(folder)
    comparison = comparison_of(inputs)
    files = write_views(folder, comparison, inputs)
    files[SUMS_FILE] = _sealed(folder, comparison, credentials)
    return BundleIndex(root=folder.root, comparison=comparison, files=files)


def write_views(
    folder: CampaignFolder, comparison: Comparison, inputs: CampaignInputs
) -> dict[str, Path]:
    """comparison.json, RESULT.md and report.html, replaced; report.html's drawings whose
    data is unchanged taken from the page it replaces (``evidence.views.html.report_figures``)."""
    # The renderer loads matplotlib: imported here so that the audit, which reuses this
    # module's comparison, does not load it at import time.
    from evidence.views.html.report import render_report  # noqa: PLC0415
    from evidence.views.html.report_figures import Figures, drawings  # noqa: PLC0415

    old = folder.path(REPORT_FILE)
    known = drawings(old.read_text(encoding="utf-8")) if old.is_file() else {}
    card = render_card(comparison)
    return {
        COMPARISON_FILE: comparison.write(folder.path(COMPARISON_FILE), replace=True),
        RESULT_FILE: write_text_atomic(folder.path(RESULT_FILE), card, replace=True),
        REPORT_FILE: write_text_atomic(
            folder.path(REPORT_FILE),
            render_report(comparison, inputs.attempts, Figures(known=known)),
            replace=True,
        ),
    }


def write_campaign_tickets(folder: CampaignFolder, comparison: Comparison, now: Clock) -> None:
    tickets = cluster(
        bad_runs(comparison.failures),
        campaign=comparison.campaign,
        matrix_id=comparison.matrix_id,
        now=now(),
    )
    write_tickets(folder.root, comparison.campaign, tickets)
