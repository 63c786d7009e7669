"""A/A calibration: the A/A matrix over many seeds; prints the instrument's false-positive rate.

    .venv/bin/python -m benchmarks aa_calibration                  # 20 seeds (~15 min)
    .venv/bin/python -m benchmarks aa_calibration --seeds 5 --workdir /tmp/aa
    .venv/bin/python -m benchmarks aa_calibration --workdir /tmp/aa --rejudge

``--rejudge`` runs nothing: it judges the campaigns an earlier run left in ``--workdir``
again with this faceoff's statistics (their comparison rebuilt from the native files,
as ``faceoff audit`` does), so a change of method is measured on the same requests.

Each seed is one whole campaign of ``matrix/examples/sim-aa.toml`` (the incumbent's
recipe on both arms; the campaign flow runs in this process, under one ephemeral
Prefect server for all seeds), its lanes torn down after it. Every ratio is truly 1,
so a 95 % interval that excludes 1 is a false positive. Printed per seed and in all:
the share of ratio intervals (cell × metric) and of cells with an interval excluding
1, against the 5 % a 95 % interval allows, and the cell runs the ``host_stall`` guard
blocked. Peers measured in the same run, from the same journals: the plain bootstrap
(one request per block) over the same accepted pairs, and the block bootstrap over
the pairs ``host_stall`` blocked, as they would have been compared without the guard.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evidence.bundle.write import comparison_of
from evidence.comparison.aa import TARGET_RATE
from evidence.comparison.cells import RATIO_METRICS, metric_sample
from evidence.comparison.read import load_campaign, scored_ok
from evidence.folder.layout import CampaignFolder
from evidence.stats.bootstrap import RatioInterval, Sample, median_ratio
from faceoff.formats.bundle.comparison import Comparison, Ratio
from flows.campaign.restore import restore_tools
from flows.prefect import server as ephemeral
from lanes.leftovers import teardown as stop_campaign_lanes
from matrix.cell import Cell
from matrix.toml.reader import load_matrix
from workload.journal import JournalScan

REPO = Path(__file__).resolve().parents[1]
MATRIX = REPO / "matrix" / "examples" / "sim-aa.toml"


@dataclass
class Tally:
    """Intervals and cells judged, and how many excluded 1."""

    intervals: int = 0
    wrong_intervals: int = 0
    cells: int = 0
    wrong_cells: int = 0

    def add(self, ratios: list[RatioInterval] | list[Ratio]) -> None:
        if not ratios:
            return
        wrong = [
            r for r in ratios if r.low > 1.0 or r.high < 1.0
        ]  # as evidence.comparison.aa judges
        self.intervals += len(ratios)
        self.wrong_intervals += len(wrong)
        self.cells += 1
        self.wrong_cells += bool(wrong)

    def line(self) -> str:
        if not self.intervals:
            return "no interval"
        rate = self.wrong_intervals / self.intervals
        cells = self.wrong_cells / self.cells
        return (
            f"{self.wrong_intervals}/{self.intervals} intervals exclude 1 ({rate:.1%}), "
            f"{self.wrong_cells}/{self.cells} cells ({cells:.1%})"
        )


@dataclass
class Totals:
    block: Tally = field(default_factory=Tally)  # what the card reports
    plain: Tally = field(default_factory=Tally)  # peer: one request per block
    unguarded: Tally = field(default_factory=Tally)  # peer: pairs host_stall blocked
    cell_runs: int = 0
    blocked_host_stall: int = 0


def seeded_matrix(folder: Path, seed: int) -> Path:
    """The A/A matrix under another seed and campaign name."""
    text = MATRIX.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^seed = \d+$", f"seed = {seed}", text, count=1)
    text = re.sub(r'(?m)^name = "sim-aa"$', f'name = "sim-aa-{seed}"', text, count=1)
    path = folder / f"sim-aa-{seed}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def pair_intervals(
    cell: Cell, journals: list[Path], seed: int, *, blocks: bool
) -> list[RatioInterval]:
    """Every metric's ratio of the two arms' journals, block or plain bootstrap."""
    inc, cand = (scored_ok(JournalScan(j)) for j in journals)
    found = []
    for metric in RATIO_METRICS:
        a, b = metric_sample(cell, inc, metric), metric_sample(cell, cand, metric)
        if not blocks:
            a, b = Sample(a.stratum, a.values), Sample(b.stratum, b.values)
        interval = median_ratio(a, b, seed=seed)
        if interval is not None:
            found.append(interval)
    return found


def attempt_journals(bundle: Path, cell_id: str) -> list[Path]:
    """The incumbent's and the candidate's latest journal of a cell, in that order."""
    arms = ["exl3-a", "exl3-b"]
    return [sorted((bundle / "cells" / cell_id / arm).glob("attempt-*/journal.jsonl"))[-1]
            for arm in arms]  # fmt: skip


def tally_seed(bundle: Path, matrix: Path, seed: int, totals: Totals, *, rejudge: bool) -> str:
    if rejudge:
        comparison = comparison_of(load_campaign(CampaignFolder.at(bundle)))
    else:
        comparison = Comparison.read(bundle / "comparison.json")
    cells = {c.id: c for c in load_matrix(matrix).cells}
    seed_tally = Tally()
    for entry in comparison.cells:
        stalled = [a for a in entry.arms if a.reason_code == "host_stall"]
        totals.cell_runs += len(entry.arms)
        totals.blocked_host_stall += len(stalled)
        seed_tally.add(entry.ratios)
        totals.block.add(entry.ratios)
        journals = attempt_journals(bundle, entry.id)
        if entry.ratios:
            plain = pair_intervals(cells[entry.id], journals, seed, blocks=False)
            totals.plain.add(plain)
        elif stalled and all(a.statuses for a in entry.arms):
            totals.unguarded.add(pair_intervals(cells[entry.id], journals, seed, blocks=True))
    dispositions = [f"{a.arm}:{a.reason_code}" for e in comparison.cells for a in e.arms]
    return f"{seed_tally.line()}; {' '.join(dispositions)}"


def run_seeds(seeds: list[int], workdir: Path) -> Iterator[tuple[int, Path, Path, float]]:
    """Run each seed's campaign in turn; yield its seed, bundle, matrix and seconds."""
    ephemeral.apply_prefect_defaults(os.environ, workdir, live_view=False)
    ports = {arm.port for arm in load_matrix(MATRIX).arms}
    tools = restore_tools(os.environ)
    with ephemeral.ephemeral_server(os.environ, avoid=ports):
        from flows.prefect.flow_runner import run_campaign  # noqa: PLC0415  (Prefect reads env at import)

        for seed in seeds:
            matrix = seeded_matrix(workdir, seed)
            started = time.monotonic()
            run_campaign(matrix, workdir)
            bundle = workdir / f"sim-aa-{seed}"
            stop_campaign_lanes(bundle, bundle.name, tools.now, tools.docker)
            yield seed, bundle, matrix, time.monotonic() - started


def earlier_seeds(seeds: list[int], workdir: Path) -> Iterator[tuple[int, Path, Path, float]]:
    """The campaigns an earlier run left in ``workdir``, judged again (0 s: none is run)."""
    for seed in seeds:
        bundle, matrix = workdir / f"sim-aa-{seed}", workdir / f"sim-aa-{seed}.toml"
        if not (bundle / "comparison.json").is_file() or not matrix.is_file():
            raise SystemExit(f"--rejudge: {bundle} holds no finished A/A campaign of seed {seed}")
        yield seed, bundle, matrix, 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="campaigns to run (default 20)")
    parser.add_argument("--first-seed", type=int, default=1, help="seed of the first campaign")
    parser.add_argument("--workdir", type=Path, help="where the campaigns go (default: temp)")
    parser.add_argument(
        "--rejudge", action="store_true", help="judge the campaigns left in --workdir again"
    )
    args = parser.parse_args()
    if args.rejudge and not args.workdir:
        parser.error("--rejudge needs the --workdir of an earlier run")
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="faceoff-aa-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    totals = Totals()
    print(f"A/A calibration: {len(seeds)} campaigns of {MATRIX.name} in {workdir}")
    campaigns = (earlier_seeds if args.rejudge else run_seeds)(seeds, workdir)
    for seed, bundle, matrix, seconds in campaigns:
        line = tally_seed(bundle, matrix, seed, totals, rejudge=args.rejudge)
        print(f"seed {seed:>3} ({seconds:.0f} s): {line}")
    result = {
        "seeds": len(seeds),
        "block bootstrap (the card)": totals.block.line(),
        "peer, plain bootstrap, same pairs": totals.plain.line(),
        "peer, block bootstrap, pairs host_stall blocked": totals.unguarded.line(),
        "cell runs blocked host_stall": f"{totals.blocked_host_stall}/{totals.cell_runs}",
    }
    for key, value in result.items():
        print(f"{key:>48}: {value}")
    block = totals.block
    if not block.intervals:
        print("false-positive rate: no accepted pair to judge (every pair blocked)")
        return
    rate = block.wrong_intervals / block.intervals
    verdict = "PASSED" if rate <= TARGET_RATE else "FAILED"
    print(f"false-positive rate {rate:.1%} (target ≤ {TARGET_RATE:.0%}): {verdict}")
    print(json.dumps({"false_positive_rate": round(rate, 4), "target": TARGET_RATE}))


if __name__ == "__main__":
    main()
