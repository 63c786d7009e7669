"""Sequential passes against the fixed design: error rates, power, requests and lane-time.

    .venv/bin/python -m benchmarks sequential                  # 100 seeds, 3 real campaigns: ~6 min
    .venv/bin/python -m benchmarks sequential --seeds 400 --real 0  # the statistics alone

Two parts, each saying what it rests on.

**Many seeds, in process.** The four natural cells of the demo (8192 and 31,600 input
tokens, C1 and C2) are played on the calibrated ``exl3-r11`` simulator profile by its own
scheduler and cost model on a virtual clock (``simulator.virtual.closed_loop``), with
output lengths drawn as the simulator draws them: one long stream of requests per cell,
its TTFTs the cell's distribution (reasoning length spread, C2 interleaving; no host noise).
A pass of a cell takes a fresh stretch of that stream for each arm; the candidate's TTFTs
are multiplied by the planted true ratio (a profile that much slower or faster, which on
a virtual clock scales every time exactly). Each pass is judged by faceoff's own
statistics: the block-bootstrap interval (``evidence.stats.bootstrap.median_ratio``, its
blocks as long as each stretch's own dependence asks as the ruling cuts them), the
sequential look (``evidence.stats.sequential.look_at``) under the design
(``evidence.stats.spending.obf_design``), the requests planned by ``evidence.stats.power``
from variances learned the way ``evidence.history.variance`` learns them (six A/A "nights"
of 64 requests per cell), 1.2× as the power table plans them. The campaign logic (a cell
runs while its criterion is undecided, the campaign stops when the outcome is settled)
is the rule's, re-stated here over those numbers. Scenarios: TTFT p50 non-inferiority 5 %
and superiority 5 % (a time: candidate/incumbent ≤ 1.05, ≤ 0.95), planted ratios 1.00,
1.05 (the margin) and 0.90 (10 % better), and the A/A instrument (ratio 1.00 against a bound
of 1: any decided cell is a false positive). The fixed design of the same error rates runs
each cell once with the requests that give 80 % power at the same 95 % confidence. The
sequential design is run twice: without a futility stop, and with the non-binding one of
``evidence.stats.futility`` (a cell also stops when its look before the last holds the
bound within the wedge), each planned for 80 % power its own way. All designs are sized
with one ``requests`` for every cell (as a matrix entry declares it), and, as a second
comparison, each cell sized on its own. Lane-time: the engine seconds of the
requests (virtual clock) plus, per pass and arm, the profile's startup, JIT warmup and the
arm's warmups.

**A few real campaigns.** ``--real N`` runs N simulator campaigns per planted ratio end to
end (the flow, lanes, client, guards, bundle): the demo's two sequential C1 cells on two
``exl3-r11`` lanes, the candidate's ``time_scale`` set so that its times are the planted
ratio of the incumbent's; each prints the rule's outcome, the passes run, requests and
lane-time (its walks in ``passes.json``).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evidence.stats import power
from evidence.stats.bootstrap import RatioInterval, Sample, median_ratio, timed_sample
from evidence.stats.futility import Futility, futility_design
from evidence.stats.known_variance import per_request
from evidence.stats.sequential import PassEstimate, futile, look_at, standing
from evidence.stats.spending import Design, exits, obf_design
from simulator.output import draw_length
from simulator.profile import Profile, load_profile
from simulator.virtual import Job, closed_loop

PROFILE = "exl3-r11"
CELLS = (("natural-8192-c1", 8192, 1), ("natural-8192-c2", 8192, 2),
         ("natural-31600-c1", 31600, 1), ("natural-31600-c2", 31600, 2))  # fmt: skip
STREAM = 6000  # simulated requests per cell
LEARNED_MARGIN = 1.2  # as evidence.comparison.power_table plans a learned variance
WARMUPS = 2
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Stream:
    """A cell's simulated requests in send order: TTFT and seconds each held the engine."""

    name: str
    concurrency: int
    ttft: tuple[float, ...]
    busy: tuple[float, ...]  # the cell's elapsed time per request (elapsed / requests)


def streams(profile: Profile, seed: int) -> list[Stream]:
    found = []
    for name, tokens, concurrency in CELLS:
        rng = random.Random(f"{seed}-{name}")
        spec = profile.output
        jobs = []
        for _ in range(STREAM):
            reasoning = draw_length(rng, spec.reasoning_median("max"), spec.length_sigma)
            visible = draw_length(rng, spec.visible_tokens_median, spec.length_sigma)
            jobs.append(Job(tokens, reasoning + visible, reasoning))
        run = closed_loop(profile, jobs, concurrency)
        ttft = tuple(t.ttft for t in sorted(run.timings, key=lambda t: t.index))
        found.append(Stream(name, concurrency, ttft, (run.elapsed / STREAM,) * STREAM))
    return found


@dataclass(frozen=True)
class Rule:
    name: str
    bound: float  # candidate/incumbent TTFT must stay at or below it (met), else not met
    aa: bool = False  # any decided cell is a false positive


RULES = {"non-inferiority 5 %": Rule("NI", 1.05), "superiority 5 %": Rule("SUP", 0.95),
         "A/A (bound 1)": Rule("AA", 1.0, aa=True)}  # fmt: skip
SCENARIOS = [("non-inferiority 5 %", r) for r in (1.00, 1.05, 0.90)] + [
    ("superiority 5 %", r) for r in (1.00, 1.05, 0.90)] + [("A/A (bound 1)", 1.00)]  # fmt: skip
# where a right decision exists: not on a bound (the margin's 1.05, the A/A's 1), where the
# only right outcome is none and every design runs all it may
DECIDABLE = {
    ("non-inferiority 5 %", 1.00),
    ("non-inferiority 5 %", 0.90),
    ("superiority 5 %", 1.00),
    ("superiority 5 %", 1.05),
    ("superiority 5 %", 0.90),
}


class Draws:
    """Stretches of a stream that do not overlap within one campaign."""

    def __init__(self, stream: Stream, rng: random.Random) -> None:
        self.stream, self.rng = stream, rng
        self.taken: list[tuple[int, int]] = []

    def take(self, n: int, scale: float) -> tuple[Sample, float]:
        for _ in range(1000):
            start = self.rng.randrange(0, STREAM - n)
            if all(start + n <= a or b <= start for a, b in self.taken):
                break
        self.taken.append((start, start + n))
        values = [scale * v for v in self.stream.ttft[start : start + n]]
        busy = scale * sum(self.stream.busy[start : start + n])
        # blocks as the ruling cuts them: as long as the stretch's own dependence asks
        timed = [(i, v, (i, "")) for i, v in enumerate(values)]
        return timed_sample(self.stream.name, timed, self.stream.concurrency), busy


def pass_interval(draws: Draws, n: int, truth: float, seed: int) -> tuple[RatioInterval, float]:
    """One pass of a cell on both arms: its ratio interval, and the engine seconds it took."""
    incumbent, busy_inc = draws.take(n, 1.0)
    candidate, busy_cand = draws.take(n, truth)
    found = median_ratio(incumbent, candidate, seed=seed)
    assert found is not None
    return found, busy_inc + busy_cand


def estimate_of(found: RatioInterval) -> PassEstimate:
    blocks = min(found.blocks_incumbent, found.blocks_candidate)
    return PassEstimate.of_interval(found.ratio, found.low, found.high, CONFIDENCE, blocks)


@dataclass
class Campaign:
    outcome: str = "no_decision"
    requests: int = 0
    lane_s: float = 0.0
    passes: int = 0
    decided: list[str] = field(default_factory=list)  # per cell: met, not_met, inconclusive


@dataclass(frozen=True)
class Setup:
    """What every campaign of a run shares."""

    profile: Profile
    cells: Sequence[Stream]
    looks: int

    def lane_overhead(self, cells: Sequence[Stream]) -> float:
        """One arm's lane start in a pass: the profile's startup and JIT warmup, and warmups."""
        per_request = statistics.fmean(s.busy[0] for s in cells)
        return (
            self.profile.timing.startup_s + self.profile.timing.jit_warmup_s + WARMUPS * per_request
        )


def sequential(
    setup: Setup, rule: Rule, truth: float, plan: dict[str, int], seed: int,
    *, futility: Futility | None = None,
) -> Campaign:  # fmt: skip
    """A campaign of sequential passes: a cell runs while its criterion is undecided (and,
    with ``futility``, has not stopped futile); the campaign stops when every cell has
    stopped or one is not met (do not promote)."""
    rng, design = random.Random(seed), obf_design(setup.looks, CONFIDENCE)
    stopped: set[str] = set()
    draws = {s.name: Draws(s, rng) for s in setup.cells}
    seen: dict[str, list[PassEstimate]] = {s.name: [] for s in setup.cells}
    status = {s.name: "inconclusive" for s in setup.cells}
    campaign = Campaign()
    for k in range(1, setup.looks + 1):
        running = [
            s for s in setup.cells if status[s.name] == "inconclusive" and s.name not in stopped
        ]
        if not running or (not rule.aa and "not_met" in status.values()):
            break
        campaign.passes = k
        for stream in running:
            found, busy = pass_interval(draws[stream.name], plan[stream.name], truth, seed + k)
            seen[stream.name].append(estimate_of(found))
            look = look_at(seen[stream.name], design, rule.bound, False)
            status[stream.name] = look.status
            if futility is not None and futile(look, futility, rule.bound):
                stopped.add(stream.name)
            campaign.requests += 2 * plan[stream.name]
            campaign.lane_s += busy
        campaign.lane_s += 2 * setup.lane_overhead(running)
    return _settle(campaign, status, rule)


def fixed(setup: Setup, rule: Rule, truth: float, plan: dict[str, int], seed: int) -> Campaign:
    """The fixed design: every cell once, judged by its 95 % interval."""
    rng = random.Random(seed)
    campaign, status = Campaign(passes=1), {}
    for stream in setup.cells:
        found, busy = pass_interval(Draws(stream, rng), plan[stream.name], truth, seed)
        status[stream.name] = standing(found.low, found.high, rule.bound, False)
        campaign.requests += 2 * plan[stream.name]
        campaign.lane_s += busy
    campaign.lane_s += 2 * setup.lane_overhead(setup.cells)
    return _settle(campaign, status, rule)


def _settle(campaign: Campaign, status: Mapping[str, str], rule: Rule) -> Campaign:
    campaign.decided = list(status.values())
    if rule.aa:
        decided = any(s != "inconclusive" for s in status.values())
        campaign.outcome = "differs" if decided else "same"
    elif "not_met" in status.values():
        campaign.outcome = "do_not_promote"
    elif all(s == "met" for s in status.values()):
        campaign.outcome = "promote"
    return campaign


def learned_variances(cells: Sequence[Stream], nights: int = 6, n: int = 64) -> dict[str, float]:
    """s² per cell from A/A nights of ``n`` requests per arm (``known_variance.per_request``
    of each night's interval, averaged), planned 1.2× larger."""
    rng = random.Random(7)
    found = {}
    for stream in cells:
        observed = []
        for night in range(nights):
            interval, _ = pass_interval(Draws(stream, rng), n, 1.0, night)
            blocks = min(interval.blocks_incumbent, interval.blocks_candidate)
            observed.append(per_request(interval.ratio, interval.low, interval.high, n, blocks))
        found[stream.name] = LEARNED_MARGIN * statistics.fmean(observed)
    return found


Plan = dict[str, int]  # cell -> requests per arm (per pass)


def plans(setup: Setup, variances: dict[str, float]) -> dict[str, dict[str, Plan]]:
    """Per sizing ("one requests", "per cell") and design ("fixed", "sequential",
    "futility"): requests per cell (per pass), for 80 % power at either rule's bound when the
    truth is 1 for the non-inferiority and 10 % better for the superiority (both ≈ 5 % from
    the bound). ``power`` plans the design with its futility stop; the design without it
    needs (its 80 % drift / the futility design's)² of those requests."""
    design = obf_design(setup.looks, CONFIDENCE)
    distance = min(math.log(1.05), math.log(0.95 / 0.90))
    with_stop = {s.name: power.sequential_needed(variances[s.name], distance, design,
                                                 s.concurrency) for s in setup.cells}  # fmt: skip
    shrink = (efficacy_drift(design) / futility_design(design).drift) ** 2
    per_cell = {
        "fixed": {s.name: power.requests_needed(variances[s.name], distance, s.concurrency,
                                                CONFIDENCE) for s in setup.cells},
        "sequential": {name: math.ceil(n * shrink) for name, n in with_stop.items()},
        "futility": with_stop,
    }  # fmt: skip
    one = {kind: dict.fromkeys(sized, max(sized.values())) for kind, sized in per_cell.items()}
    return {"one requests": one, "per cell": per_cell}


def efficacy_drift(design: Design) -> float:
    """The drift per pass the design without a futility stop decides with 80 % power."""
    low, high = 0.0, 20.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (
            (middle, high) if exits(design, middle).upper_total < power.POWER else (low, middle)
        )
    return high


def rate(hits: int, runs: int) -> str:
    """A share with its 95 % Wilson interval."""
    p, z = hits / runs, 1.96
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / (1 + z * z / runs)
    return f"{p:6.1%} [{max(0.0, centre - half):.1%}, {min(1.0, centre + half):.1%}]"


@dataclass
class Totals:
    campaigns: list[Campaign]

    def share(self, outcome: str) -> str:
        return rate(sum(c.outcome == outcome for c in self.campaigns), len(self.campaigns))

    def cell_share(self, statuses: set[str]) -> str:
        cells = [s for c in self.campaigns for s in c.decided]
        return rate(sum(s in statuses for s in cells), len(cells))

    def mean(self, what: str) -> float:
        return statistics.fmean(getattr(c, what) for c in self.campaigns)


HEADER = (
    f"{'scenario':<28} {'design':<10} {'campaigns promoted':>26} "
    f"{'cells met (A/A: decided)':>26} {'requests':>9} {'lane-h':>7} {'passes':>6}"
)


def scenario(
    setup: Setup, sized: dict[str, Plan], rule_name: str, truth: float, seeds: int
) -> dict[str, Totals]:
    rule = RULES[rule_name]
    stop = futility_design(obf_design(setup.looks, CONFIDENCE))
    found = {
        "fixed": Totals([fixed(setup, rule, truth, sized["fixed"], s) for s in range(seeds)]),
        "sequential": Totals([sequential(setup, rule, truth, sized["sequential"], s)
                              for s in range(seeds)]),
        "futility": Totals([sequential(setup, rule, truth, sized["futility"], s, futility=stop)
                            for s in range(seeds)]),
    }  # fmt: skip
    for design_name, totals in found.items():
        wanted = {"met", "not_met"} if rule.aa else {"met"}
        share = totals.share("differs" if rule.aa else "promote")
        print(f"{f'{rule_name} @ {truth:.2f}':<28} {design_name:<10} {share:>26} "
              f"{totals.cell_share(wanted):>26} {totals.mean('requests'):>9.0f} "
              f"{totals.mean('lane_s') / 3600:>7.2f} {totals.mean('passes'):>6.2f}")  # fmt: skip
    return found


def savings(design: str, found: Sequence[dict[str, Totals]]) -> str:
    """The design's mean requests and lane-time over the fixed design's, per scenario, averaged
    over all and over those with a right decision to reach."""
    ratios = {what: [f[design].mean(what) / f["fixed"].mean(what) for f in found]
              for what in ("requests", "lane_s")}  # fmt: skip
    decisions = [r for r, named in zip(ratios["requests"], SCENARIOS, strict=True)
                 if named in DECIDABLE]  # fmt: skip
    return (
        f"{design} / fixed, mean over the {len(SCENARIOS)} scenarios: requests "
        f"{statistics.fmean(ratios['requests']):.2f}, lane-time "
        f"{statistics.fmean(ratios['lane_s']):.2f}; over the {len(DECIDABLE)} with a right "
        f"decision to reach: requests {statistics.fmean(decisions):.2f}"
    )


def many_seeds(seeds: int, looks: int) -> None:
    started = time.monotonic()
    profile = load_profile(PROFILE)
    setup = Setup(profile, streams(profile, seed=2026), looks)
    variances = learned_variances(setup.cells)
    sized = plans(setup, variances)
    print(f"simulated {STREAM} requests per cell on {PROFILE}; looks (max_passes) {looks}")
    for s in setup.cells:
        print(f"  {s.name:<17} s = {math.sqrt(variances[s.name] / LEARNED_MARGIN):.3f} "
              f"(six A/A nights of 64)")  # fmt: skip
    for sizing, by_design in sized.items():
        print(f"\n{sizing}: requests per cell, fixed {by_design['fixed']}; sequential per pass "
              f"{by_design['sequential']}; with the futility stop per pass "
              f"{by_design['futility']}\n{HEADER}")  # fmt: skip
        found = [scenario(setup, by_design, *named, seeds) for named in SCENARIOS]
        for design_name in ("sequential", "futility"):
            print(savings(design_name, found))
    print(f"\n{seeds} seeds per scenario; {time.monotonic() - started:.0f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="campaigns per scenario (≥ 20)")
    parser.add_argument("--looks", type=int, default=4, help="max_passes of the sequential design")
    parser.add_argument("--real", type=int, default=1, help="real simulator campaigns per ratio")
    args = parser.parse_args()
    many_seeds(args.seeds, args.looks)
    if args.real:
        from benchmarks.sequential_real import real_campaigns  # noqa: PLC0415  (Prefect, lanes)

        real_campaigns(args.real)


if __name__ == "__main__":
    main()
