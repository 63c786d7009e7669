"""Right decisions: Monte Carlo over faceoff's own ruling on synthetic cells of known truth.

    .venv/bin/python -m benchmarks decisions                    # 200 campaigns a row: ~4 min
    .venv/bin/python -m benchmarks decisions --campaigns 2000 --jobs 2   # 2,000 a row
    .venv/bin/python -m benchmarks decisions --campaigns 2000 --rows "fp throughput" "fp goodput"

Each campaign builds comparison cells the way the comparison does — each arm's requests
drawn from a noise model, each ratio by faceoff's own intervals
(``evidence.stats.bootstrap.median_ratio``, the time-block ``evidence.stats.window``, a
replicated cell's ``replicates.log_t_interval``), each ``Ratio`` by
``evidence.comparison.cells.interval_ratio`` — and rules on them with
``evidence.comparison.ruling.candidate_ruling`` (and ``aa.aa_calibration``). One arm's
window is 64 requests at concurrency 1 unless said; as the walk orders a pass
(``flows.campaign.passes.alternated``), the incumbent's window runs first in a campaign's
first, third … cell and the candidate's in its second, fourth ….

Noise models (one arm's log request latencies, marginal spread 0.3):
  iid      independent;
  stalls   a two-state chain: a stall starts with probability 3 % per request, lasts 8
           requests on average, and doubles latency while it lasts (clustered outliers);
  ar1      AR(1), φ = 0.6 (neighbouring requests alike);
  drift    iid, plus a per-arm-window shift N(0, 0.02²), plus 3 % slower in the second
           window (a night that drifts);
  window   AR(1) as above with the drift's window noise: what a real host does.

Rows:
  false promote   the least favourable configuration: one criterion whose true ratio sits
                  on its bound in one cell, the same criterion easy in a second cell; per
                  metric kind — latency (TTFT p50, 5 % margin), throughput (output
                  throughput, 5 % margin), goodput (requests per second within the SLO, 5 %
                  margin), energy (energy per output token, 5 % margin, 3 replicates of
                  windows with a 3 % spread between them). Goal ≤ 2.5 %.
  do not promote  4 cells × 3 criteria (TTFT, E2E, output throughput, 5 % margins) all on
                  their bounds: campaigns ruled "do not promote" (goal ≤ 5 %, the
                  rule's one-sided 2.5 % and then some), beside one test's rate p and the
                  uncorrected union 1 − (1 − p)^12.
  A/A             4 cells × 3 metrics of two identical arms: campaigns whose A/A verdict
                  fails (goal ≤ 5 %), beside one interval's exclusion rate p and
                  1 − (1 − p)^12 (the old "at most 5 % of intervals" rule's rate).
  order           every do-not-promote campaign ruled again with its criteria reversed:
                  outcomes that differ (goal 0).
  power           a TTFT p50 criterion with a 10 % non-inferiority margin, the candidate as
                  good as the incumbent (the effect a plan is made for): its cell planned
                  as passes (``evidence.stats.power.passes_needed``, an even number, arm
                  order alternating ABBA) at the 80 % upper confidence limit of s² learned
                  from 3 A/A nights of 64 requests per arm, plus the variance between the
                  nights' windows where Cochran's Q shows one at 20 %
                  (``power_table.planned_variance``, ``heterogeneity.detected``), judged by
                  the passes' between-replicate interval: campaigns promoted (goal ≥ 80 %),
                  beside the planned requests and passes.
  calibration     one A/A interval's exclusion rate by requests per arm (n = 8 … 128): the
                  n from which the interval holds its 5 % is where it may decide
                  (``bootstrap.calibrated``: below it the figure is descriptive).
"""

from __future__ import annotations

import argparse
import functools
import math
import multiprocessing
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.decisions_fidelity import fidelity_rows
from evidence.comparison.aa import aa_calibration
from evidence.comparison.cells import interval_ratio
from evidence.comparison.power_table import planned_variance
from evidence.comparison.replicates import log_t_interval
from evidence.comparison.ruling import Replicates, candidate_ruling
from evidence.stats.bootstrap import median_ratio, timed_sample
from evidence.stats.heterogeneity import between_variance, detected
from evidence.stats.known_variance import KnownVariance, learned, per_request
from evidence.stats.power import passes_needed
from evidence.stats.sequential import PassEstimate
from evidence.stats.window import WindowRequest, window_blocks, window_ratio
from faceoff.formats.bundle.comparison import ArmCell, CellEntry, PairEntry, Ratio, ReplicatedRatio
from matrix.cell import Sampling
from matrix.rule import Rule

NS = 1_000_000_000
SPREAD = 0.3
SEED = 20261207  # every campaign's bootstrap seed, as a campaign's one seed serves its cells
NOISES = ("iid", "stalls", "ar1", "drift", "window")
Gen = np.random.Generator


def arm_logs(rng: Gen, noise: str, n: int, second: bool) -> np.ndarray:
    """One arm window's log latencies under ``noise`` (``second``: it runs after the other)."""
    if noise == "window":
        return arm_logs(rng, "ar1", n, second) + window_shift(rng, second)
    if noise == "ar1":
        phi, shocks = 0.6, rng.normal(0, SPREAD * math.sqrt(1 - 0.36), n)
        logs = np.empty(n)
        logs[0] = rng.normal(0, SPREAD)
        for i in range(1, n):
            logs[i] = phi * logs[i - 1] + shocks[i]
        return logs
    logs = rng.normal(0, SPREAD, n)
    if noise == "stalls":
        stalled, state = np.zeros(n), False
        for i in range(n):
            state = rng.random() < (1 - 1 / 8) if state else rng.random() < 0.03
            stalled[i] = state
        logs += math.log(2) * stalled
    if noise == "drift":
        logs += window_shift(rng, second)
    return logs


def window_shift(rng: Gen, second: bool) -> float:
    """One arm window's shift: N(0, 0.02²), and 3 % slower for the window that runs second."""
    return float(rng.normal(0, 0.02)) + (math.log(1.03) if second else 0.0)


@dataclass(frozen=True)
class Pair:
    """The two arms' latencies in one cell window (seconds)."""

    incumbent: np.ndarray
    candidate: np.ndarray


def pair(rng: Gen, noise: str, n: int, truth: float, cell: int = 0) -> Pair:
    """``truth``: candidate/incumbent of every latency (a time: > 1 slower); ``cell``: its
    place in the campaign (the candidate's window runs first in odd places)."""
    inc = np.exp(arm_logs(rng, noise, n, second=cell % 2 == 1))
    cand = np.exp(arm_logs(rng, noise, n, second=cell % 2 == 0)) * truth
    return Pair(inc, cand)


def latency_ratio(metric: str, found: Pair) -> Ratio | None:
    samples = [
        timed_sample("s", [(i, v, (i, "p")) for i, v in enumerate(arm.tolist())], 1)
        for arm in (found.incumbent, found.candidate)
    ]
    interval = median_ratio(samples[0], samples[1], seed=SEED, resamples=RESAMPLES[0])
    if interval is None:
        return None
    return interval_ratio(metric, interval, name="cand", statistic="p50", concurrency=1)


def rate_ratio(metric: str, found: Pair) -> Ratio | None:
    """A window rate: closed loop at concurrency 1, 100 tokens a request (a request's
    duration is its latency), so the candidate's rate is 1/truth the incumbent's."""
    sides = []
    for seconds in (found.incumbent, found.candidate):
        ends = np.cumsum(seconds) * NS
        starts = np.concatenate([[0.0], ends[:-1]])
        amount = 100.0 if metric == "output_tps" else 1.0
        sent = [WindowRequest(int(s), int(e), amount) for s, e in zip(starts, ends, strict=True)]
        sides.append(window_blocks(sent, 1))
    if sides[0] is None or sides[1] is None:
        return None
    interval = window_ratio(sides[0], sides[1], seed=SEED, resamples=RESAMPLES[0])
    if interval is None:
        return None
    return interval_ratio(metric, interval, name="cand", statistic="p50", concurrency=1)


RESAMPLES = [1000]  # set from --resamples


def entry(cell_id: str, ratios: Sequence[Ratio], window: Sequence[Ratio] = ()) -> CellEntry:
    arms = [
        ArmCell(arm=name, attempt=1, disposition="accepted", reason_code=None, reason=None,
                oom=None, planned=64, statuses={"ok": 64}, refusals=0, input_tokens=None,
                completion_tokens=None, metrics={}, aggregate_output_tps=None, engine=None,
                memory=None, sources={}, history=[])
        for name in ("inc", "cand")
    ]  # fmt: skip
    comparable = PairEntry(candidate="cand", comparable=True, reason=None, sentence="",
                           verdict="mixed")  # fmt: skip
    return CellEntry(id=cell_id, kind="natural", stratum="natural/512/c1", input_target=512,
                     concurrency=1, requests=64, warmups=0, sampling=Sampling(), arms=arms,
                     pairs=[comparable], ratios=list(ratios),
                     window_ratios=list(window))  # fmt: skip


def rule(*criteria: dict[str, object]) -> Rule:
    return Rule.model_validate({"criteria": list(criteria)})


MARGIN = 0.05
KINDS: dict[str, tuple[str, float]] = {  # kind -> (metric, its ratio on the bound)
    "latency (TTFT p50)": ("ttft_s", 1 + MARGIN),
    "throughput (output tok/s)": ("output_tps", 1 - MARGIN),
    "goodput (req/s in SLO)": ("goodput_rps", 1 - MARGIN),
    "energy (J/token, 3 windows)": ("energy_per_token_j", 1 + MARGIN),
}


def figure_cell(
    rng: Gen, noise: str, cell: tuple[str, int], metric: str, truth: float
) -> CellEntry:
    """A cell (its id and place) whose ``metric`` has candidate/incumbent ``truth`` (for a
    rate, the latencies are 1/truth slower)."""
    cell_id, place = cell
    if metric == "ttft_s":
        found = latency_ratio(metric, pair(rng, noise, 64, truth, place))
        return entry(cell_id, [found] if found else [])
    found = rate_ratio(metric, pair(rng, noise, 64, 1 / truth, place))
    return entry(cell_id, [], [found] if found else [])


def abba_shift(noise: str, window: int) -> float:
    """A drifting night's shift of replicate ``window``'s ratio (0-based): the candidate runs
    second in odd passes (3 % worse) and first in even ones (3 % better), ABBA."""
    if noise not in {"drift", "window"}:
        return 0.0
    return math.log(1.03) * (1 if window % 2 == 0 else -1)


def energy_campaign(rng: Gen, noise: str, truth: float) -> tuple[list[CellEntry], Replicates]:
    """Two replicated cells (3 windows each): the first on ``truth``, the second easy."""
    cells, between, written = [], [], {}
    for name, ratio in (("a", truth), ("b", 0.8)):
        points = [ratio * math.exp(rng.normal(abba_shift(noise, k), 0.03)) for k in range(3)]
        between.append(replicated("energy_per_token_j", name, points))
        for k in (1, 2, 3):
            cells.append(entry(f"{name}-r{k}", []))
            written[f"{name}-r{k}"] = name
    return cells, Replicates(between, written)


def replicated(metric: str, name: str, points: Sequence[float]) -> ReplicatedRatio:
    """Cell ``name``'s between-replicate interval of its replicates' ratios ``points``."""
    estimate, low, high = log_t_interval(points)
    return ReplicatedRatio(
        cell=name, candidate="cand", metric=metric, replicates=len(points),
        compared=[f"{name}-r{k + 1}" for k in range(len(points))], ratios=list(points),
        ratio=estimate, low=low, high=high, confidence=0.95, reason=None,
    )  # fmt: skip


def false_promote(rng: Gen, noise: str, kind: str) -> bool:
    metric, bound = KINDS[kind]
    criterion = {"metric": metric, "non_inferiority": MARGIN}
    if metric == "energy_per_token_j":
        cells, groups = energy_campaign(rng, noise, bound)
        return candidate_ruling(rule(criterion), cells, "cand", groups).outcome == "promote"
    easy = 0.8 if bound > 1 else 1.25
    cells = [
        figure_cell(rng, noise, ("a", 0), metric, bound),
        figure_cell(rng, noise, ("b", 1), metric, easy),
    ]
    return candidate_ruling(rule(criterion), cells, "cand").outcome == "promote"


ON_BOUND = [  # 3 criteria, each with its true ratio on its bound
    ({"metric": "ttft_s", "non_inferiority": MARGIN}, 1 + MARGIN),
    ({"metric": "e2e_s", "non_inferiority": MARGIN}, 1 + MARGIN),
    ({"metric": "output_tps", "non_inferiority": MARGIN}, 1 - MARGIN),
]


def do_not_promote(rng: Gen, noise: str) -> tuple[bool, int, bool]:
    """(ruled do not promote, single tests wholly worse, outcome changed by reversing)."""
    cells = []
    for k in range(4):
        ttft = latency_ratio("ttft_s", pair(rng, noise, 64, 1 + MARGIN, k))
        e2e_pair = pair(rng, noise, 64, 1 + MARGIN, k)
        e2e = latency_ratio("e2e_s", e2e_pair)
        tps = rate_ratio("output_tps", e2e_pair)
        cells.append(entry(f"c{k}", [r for r in (ttft, e2e) if r], [tps] if tps else []))
    criteria = [c for c, _ in ON_BOUND]
    ruled = candidate_ruling(rule(*criteria), cells, "cand")
    reversed_ = candidate_ruling(rule(*reversed(criteria)), cells, "cand")
    worse = sum(_wholly_worse(r) for c in cells for r in [*c.ratios, *c.window_ratios])
    return ruled.outcome == "do_not_promote", worse, ruled.outcome != reversed_.outcome


def _wholly_worse(r: Ratio) -> bool:
    bound = 1 - MARGIN if r.higher_is_better else 1 + MARGIN
    return r.high < bound if r.higher_is_better else r.low > bound


def aa(rng: Gen, noise: str) -> tuple[bool, int, int]:
    """(A/A verdict failed, intervals excluding 1, intervals)."""
    cells = []
    for k in range(4):
        found = [
            latency_ratio(m, pair(rng, noise, 64, 1.0, k)) for m in ("ttft_s", "e2e_s", "tpot_s")
        ]
        cells.append(entry(f"c{k}", [r for r in found if r]))
    verdict = aa_calibration(cells)
    return verdict.passed is False, verdict.excluding_one, verdict.intervals


POWER_MARGIN = 0.10
NIGHTS = 3


def learned_variance(rng: Gen, noise: str) -> KnownVariance:
    """The variance a plan uses, learned from ``NIGHTS`` A/A nights of 64 requests per arm,
    with the variance between the nights' windows where Cochran's Q shows one."""
    observed, windows, df = [], [], 0
    for night in range(NIGHTS):
        found = latency_ratio("ttft_s", pair(rng, noise, 64, 1.0, night))
        if found is None:
            continue
        blocks = min(found.blocks_incumbent, found.blocks_candidate)
        observed.append(per_request(found.ratio, found.low, found.high, 64, blocks))
        window = PassEstimate.of_interval(found.ratio, found.low, found.high, 0.95, blocks)
        windows.append((window.log_ratio, window.se))
        df += blocks - 1
    names = [f"aa-{k}" for k in range(len(observed))]
    between = between_variance(windows) if detected(windows) else 0.0
    return learned("ttft_s", "p50", observed=observed, source="aa", campaigns=names, df=df,
                   requests=64 * len(observed), between=between)  # fmt: skip


def powered(rng: Gen, noise: str) -> tuple[bool, int, int]:
    """(promoted, planned requests per arm in all, passes) for a cell planned as the power
    table plans passes (``power.passes_needed`` at ``power_table.planned_variance``), run in
    alternating arm order and judged by their between-replicate interval."""
    known = learned_variance(rng, noise)
    distance = math.log(1 + POWER_MARGIN)
    passes, n = passes_needed(planned_variance(known), distance, 1, confidence=0.95)
    criterion = rule({"metric": "ttft_s", "non_inferiority": POWER_MARGIN})
    return replicated_ruling(rng, noise, passes, n, criterion) == "promote", passes * n, passes


def replicated_ruling(rng: Gen, noise: str, passes: int, n: int, criterion: Rule) -> str:
    """The outcome of ``passes`` passes of ``n`` requests per arm, the candidate as good as
    the incumbent, the arm that runs first alternating pass by pass (ABBA)."""
    points, cells, written = [], [], {}
    for k in range(passes):
        found = latency_ratio("ttft_s", pair(rng, noise, n, 1.0, k))
        points += [found.ratio] if found else []
        cells.append(entry(f"a-r{k + 1}", [found] if found else []))
        written[f"a-r{k + 1}"] = "a"
    groups = Replicates([replicated("ttft_s", "a", points)], written)
    return candidate_ruling(criterion, cells, "cand", groups).outcome


def calibration(rng: Gen, noise: str, n: int) -> bool:
    """One A/A interval on ``n`` requests per arm excludes 1 (ignoring descriptiveness)."""
    found = latency_ratio("ttft_s", pair(rng, noise, n, 1.0))
    return found is not None and (found.low > 1 or found.high < 1)


def rate(hits: Callable[[Gen], bool], campaigns: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return sum(hits(rng) for _ in range(campaigns)) / campaigns


def union(p: float, tests: int) -> float:
    return 1 - (1 - p) ** tests


# Each row is its own seeded stream of campaigns, so rows run apart (``--jobs``) and give
# the same figures in any process and any order.
def false_promote_row(kind: str, noise: str, campaigns: int, seed: int) -> str:
    return f"{rate(lambda g: false_promote(g, noise, kind), campaigns, seed):.1%}"


def do_not_promote_row(noise: str, campaigns: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    runs = [do_not_promote(rng, noise) for _ in range(campaigns)]
    p = sum(w for _, w, _ in runs) / (12 * campaigns)
    said = sum(d for d, _, _ in runs) / campaigns
    changed = sum(o for *_, o in runs)
    return f"| {noise} | {said:.1%} | {p:.2%} | {union(p, 12):.1%} | {changed} of {campaigns} |"


def aa_row(noise: str, campaigns: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    runs = [aa(rng, noise) for _ in range(campaigns)]
    p = sum(x for _, x, _ in runs) / max(1, sum(n for *_, n in runs))
    flagged = sum(f for f, _, _ in runs) / campaigns
    return f"| {noise} | {flagged:.1%} | {p:.2%} | {union(p, 12):.1%} |"


def power_row(noise: str, campaigns: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    plans = [powered(rng, noise) for _ in range(campaigns)]
    sizes, passes = sorted(n for _, n, _ in plans), sorted(k for *_, k in plans)
    share = sum(p for p, _, _ in plans) / campaigns
    middle = f"{sizes[len(sizes) // 2]} ({sizes[0]}–{sizes[-1]})"
    return f"| {noise} | {share:.1%} | {middle} | {passes[len(passes) // 2]} |"


def calibration_row(noise: str, size: int, campaigns: int, seed: int) -> str:
    return f"{rate(lambda g: calibration(g, noise, size), campaigns, seed):.1%}"


SIZES = (8, 16, 29, 64, 128)


def tasks(c: int) -> dict[str, Callable[[], str]]:
    """Every row's figures by name, the longest (power) first so that jobs finish together."""
    found: dict[str, Callable[[], str]] = {}
    for i, noise in enumerate(NOISES):
        found[f"power {noise}"] = functools.partial(power_row, noise, c, 500 + i)
        found[f"dnp {noise}"] = functools.partial(do_not_promote_row, noise, c, 200 + i)
        found[f"aa {noise}"] = functools.partial(aa_row, noise, c, 300 + i)
    for i, kind in enumerate(KINDS):
        for noise in NOISES:
            found[f"fp {kind} {noise}"] = functools.partial(false_promote_row, kind, noise, c,
                                                            100 + i)  # fmt: skip
    for i, noise in enumerate(("iid", "ar1", "stalls")):
        for size in SIZES:
            found[f"cal {noise} {size}"] = functools.partial(calibration_row, noise, size, c,
                                                             400 + i)  # fmt: skip
    return found


def _call(task: Callable[[], str]) -> str:
    return task()


def _resample_with(resamples: int) -> None:
    RESAMPLES[0] = resamples


def measured(c: int, resamples: int, jobs: int, chosen: Sequence[str] = ()) -> dict[str, str]:
    """Every row's figures (those whose name holds one of ``chosen``), in ``jobs`` processes."""
    _resample_with(resamples)
    named = {k: t for k, t in tasks(c).items() if not chosen or any(w in k for w in chosen)}
    if jobs <= 1:
        return {name: task() for name, task in named.items()}
    context = multiprocessing.get_context("fork")  # the rows' functions live in __main__
    found = []
    with context.Pool(jobs, _resample_with, (resamples,)) as pool:
        for name, row in zip(named, pool.imap(_call, named.values()), strict=True):
            print(f"{name}: {row}", file=sys.stderr, flush=True)  # what a stopped run had
            found.append(row)
    return dict(zip(named, found, strict=True))


def report(c: int, rows: dict[str, str]) -> None:
    print("\nfalse promote at the least favourable configuration (goal ≤ 2.5 %)")
    print("| kind | " + " | ".join(NOISES) + " |\n|---|" + "---|" * len(NOISES))
    for kind in KINDS:
        print(f"| {kind} | " + " | ".join(rows[f"fp {kind} {n}"] for n in NOISES) + " |")
    print("\ndo not promote, 4 cells × 3 criteria on their bounds (goal ≤ 5 % per campaign)")
    print("| noise | campaigns ruled do not promote (Holm) | one test p | 1 − (1 − p)^12", end="")
    print(" | order changed |\n|---|---|---|---|---|")
    print("\n".join(rows[f"dnp {n}"] for n in NOISES))
    print("\nA/A campaigns, 4 cells × 3 metrics (goal ≤ 5 % flagged)")
    print("| noise | flagged (binomial test) | one interval p | 1 − (1 − p)^12 |")
    print("|---|---|---|---|\n" + "\n".join(rows[f"aa {n}"] for n in NOISES))
    print(f"\npower, {POWER_MARGIN:.0%} margin, s² from {NIGHTS} A/A nights (goal ≥ 80 %)")
    print("| noise | promoted | planned requests per arm in all (median, range) | passes ", end="")
    print("(median) |\n|---|---|---|---|")
    print("\n".join(rows[f"power {n}"] for n in NOISES))
    print("\ncalibration: one A/A interval excluding 1, by requests per arm (goal ≤ 5 %)")
    print("| noise | " + " | ".join(f"n = {n}" for n in SIZES) + " |\n|---|" + "---|" * len(SIZES))
    for noise in ("iid", "ar1", "stalls"):
        print(f"| {noise} | " + " | ".join(rows[f"cal {noise} {n}"] for n in SIZES) + " |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=200, help="campaigns per row")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--jobs", type=int, default=1, help="processes the rows run in")
    parser.add_argument("--rows", nargs="+", default=(), metavar="WORDS",
                        help="only the rows whose name holds one of these (e.g. 'fp goodput "
                             "stalls', 'power'), each printed as name: figure")  # fmt: skip
    args = parser.parse_args(argv)
    started = time.perf_counter()
    c = args.campaigns
    print(f"{c} campaigns per row, {args.resamples} bootstrap resamples, 64 requests per arm")
    rows = measured(c, args.resamples, args.jobs, args.rows)
    if args.rows:
        print("\n".join(f"{name}: {row}" for name, row in rows.items()))
    else:
        report(c, rows)
        fidelity_rows(c)  # the fidelity limits' rows (benchmarks.decisions_fidelity)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
