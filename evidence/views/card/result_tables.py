"""The result card's tables, rendered from the comparison. Nothing here computes a figure."""

from __future__ import annotations

from collections.abc import Callable

from evidence.comparison.cells import SOURCE_FILES
from evidence.folder.layout import CELLS_DIR
from evidence.views.card.extra_rows import ENERGY_ROWS, SPECULATION_ROW, extra_rows
from evidence.views.card.markdown import Sources, table
from faceoff import format as fmt
from faceoff.formats.bundle.comparison import RATIO_LABELS, ArmCell, ArmEntry, CellEntry, Comparison
from faceoff.formats.lane import BOOT_LOG_FILE
from faceoff.formats.reasons import Disposition

Cell = Callable[[ArmCell], str]


def _p(a: ArmCell, metric: str, stat: str = "p50") -> float | None:
    stats = a.metrics.get(metric)
    return getattr(stats, stat) if stats else None


def _tps(value: float | None) -> str:
    return fmt.MISSING if value is None else f"{fmt.rate(value)} tok/s"


HEADLINE: list[tuple[str, str, Cell]] = [
    ("effective prefill p50", "metrics.effective_prefill_tps.p50",
     lambda a: _tps(_p(a, "effective_prefill_tps"))),
    ("first output / visible TTFT p50", "metrics.ttfo_s.p50, metrics.ttft_s.p50",
     lambda a: f"{fmt.seconds(_p(a, 'ttfo_s'))} / {fmt.seconds(_p(a, 'ttft_s'))}"),
    ("decode p50", "metrics.decode_tps.p50", lambda a: _tps(_p(a, "decode_tps"))),
    ("end-to-end p50 (p95)", "metrics.e2e_s.p50, metrics.e2e_s.p95",
     lambda a: f"{fmt.seconds(_p(a, 'e2e_s'))} ({fmt.seconds(_p(a, 'e2e_s', 'p95'))})"),
    ("aggregate output throughput", "aggregate_output_tps",
     lambda a: _tps(a.aggregate_output_tps)),
]  # fmt: skip


DECODE_KEY = "metrics.decode_tps.p50"


def _arm_names(c: Comparison) -> list[str]:
    return [a.name for a in c.arms]


def _value(cell: CellEntry, arm: str, render: Cell) -> str:
    entry = next((a for a in cell.arms if a.arm == arm), None)
    if entry is None:
        return "not planned"
    return render(entry) if entry.disposition is Disposition.ACCEPTED else standing(entry)


def disposition(a: ArmCell) -> str:
    """The disposition with its reason code: 'failed (contract_overrun)'."""
    coded = a.disposition is not Disposition.ACCEPTED and a.reason_code
    return f"{a.disposition} ({a.reason_code})" if coded else a.disposition


def standing(a: ArmCell) -> str:
    """A cell run's disposition with its reason, in place of figures that do not count."""
    if a.disposition is Disposition.ACCEPTED:
        return "accepted"
    pending = a.disposition is Disposition.PENDING
    reason = a.reason or ("not run yet" if pending else "no reason recorded")
    return f"{disposition(a)}: {reason.rstrip('.')}"


def _accepted_somewhere(cell: CellEntry) -> bool:
    return any(a.disposition is Disposition.ACCEPTED for a in cell.arms)


def _cell_label(cell: CellEntry) -> str:
    inputs = [
        a.input_tokens
        for a in cell.arms
        if a.disposition is Disposition.ACCEPTED and a.input_tokens
    ]
    if not inputs:
        return cell.id
    return f"{cell.id} (~{fmt.count(inputs[0].p50)} actual input, C{cell.concurrency})"


def headline(c: Comparison, sources: Sources) -> str:
    names = _arm_names(c)
    rows = []
    for cell in filter(_accepted_somewhere, c.cells):
        files = [a.sources["summary"] for a in cell.arms if "summary" in a.sources]
        for n, (label, key, render) in enumerate(HEADLINE):
            ref = sources.ref(f"cells[{cell.id}].arms[*].{key}", files)
            values = (_value(cell, a, render) for a in names)
            rows.append([_cell_label(cell) if n == 0 else "", label, *values, ref])
            if key == DECODE_KEY:
                rows += extra_rows(cell, names, sources, _value, SPECULATION_ROW)
        if any(a.goodput for a in cell.arms):
            ref = sources.ref(f"cells[{cell.id}].arms[*].goodput", files)
            values = (_value(cell, a, goodput_words) for a in names)
            rows.append(["", f"goodput within SLO ({slo_words(cell)})", *values, ref])
        rows += extra_rows(cell, names, sources, _value, *ENERGY_ROWS)
    rows += [["all accepted cells" if n == 0 else "", *row]
             for n, row in enumerate(_totals_rows(c, sources))]  # fmt: skip
    return table(["cell", "measurement", *names, "source"], rows)


def goodput_words(a: ArmCell) -> str:
    """'1.20 req/s, 340.00 tok/s; 95.00% met (within SLO)'."""
    g = a.goodput
    if g is None:
        return fmt.MISSING
    verdict = {True: "within SLO", False: "outside SLO", None: "no request"}[g.within_slo]
    return (
        f"{fmt.rate(g.requests_per_s)} req/s, {_tps(g.output_tps)}; "
        f"{fmt.percent(g.attainment)} met ({verdict})"
    )


def slo_words(cell: CellEntry) -> str:
    """The cell's SLO bounds and target, e.g. 'TTFT ≤ 500 ms, E2E ≤ 4000 ms for 90%'."""
    slo = next(a.goodput.slo for a in cell.arms if a.goodput)
    bounds = [
        f"{name} ≤ {bound:g} ms"
        for name, bound in (("TTFT", slo.ttft_ms), ("TPOT", slo.tpot_ms), ("E2E", slo.e2e_ms))
        if bound is not None
    ]
    return f"{', '.join(bounds)} for {slo.attainment:.0%}"


def _row(label: str, values: list[str], ref: str | None = None) -> list[str]:
    return [label, *values, *([ref] if ref is not None else [])]


def _gpu(c: Comparison, used: int | None, free: int | None) -> str:
    if used is None and "gpu_memory" in c.not_applicable:
        return "not applicable (declared)"
    return f"{fmt.gib(used)} / {fmt.gib(free)}"


def _kv_allocation(c: Comparison, arm: str) -> str:
    boot = next(a.boot for a in c.arms if a.name == arm)
    if boot is None:
        return fmt.MISSING
    if boot.kv_cache_gib is None:  # a CPU engine prints the pool in tokens only
        tokens = boot.kv_cache_tokens
        return fmt.MISSING if tokens is None else f"{fmt.count(tokens)} tokens, as printed"
    return f"{boot.kv_cache_gib:.2f} GiB, as printed"


COUNTED_SOURCES = ("summary", "telemetry", "cell")  # where the totals' counts come from


def _totals_rows(c: Comparison, sources: Sources) -> list[list[str]]:
    t = c.totals
    boot_files = [s for a in c.arms for s in a.sources if s.endswith(BOOT_LOG_FILE)]
    counted = [f"{CELLS_DIR}/*/*/attempt-*/{SOURCE_FILES[k]}" for k in COUNTED_SOURCES]
    return [
        _row(
            "Runtime-reported KV token pool",
            [f"{fmt.count(x.kv_pool_tokens)} slots" for x in t],
            sources.ref("totals[*].kv_pool_tokens", _cells_of(c, [x.kv_pool_cell for x in t])),
        ),
        _row(
            "Startup-reported KV allocation per GPU",
            [_kv_allocation(c, x.arm) for x in t],
            sources.ref("arms[*].boot.kv_cache_gib", boot_files),
        ),
        _row(
            "Worst sampled GPU used / minimum free",
            [_gpu(c, x.worst_gpu_used_bytes, x.min_gpu_free_bytes) for x in t],
            sources.ref(
                "totals[*].worst_gpu_used_bytes, min_gpu_free_bytes",
                _cells_of(c, [x.worst_gpu_cell for x in t]),
            ),
        ),
        _row(
            "Largest cell sampled lane (cgroup) memory",
            [fmt.gib(x.lane_peak_bytes) for x in t],
            sources.ref("totals[*].lane_peak_bytes", _cells_of(c, [x.lane_peak_cell for x in t])),
        ),
        _row(
            "Accepted requests / OOM / preemption / refusal",
            [f"{x.scored_ok} / {x.oom_cells} / {x.preemptions:g} / {x.refusals}" for x in t],
            sources.ref("totals[*].scored_ok, oom_cells, preemptions, refusals", counted),
        ),
    ]


def _cells_of(c: Comparison, cell_ids: list[str | None], kind: str = "telemetry") -> list[str]:
    wanted = set(filter(None, cell_ids))
    return sorted(
        a.sources[kind]
        for cell in c.cells
        if cell.id in wanted
        for a in cell.arms
        if kind in a.sources
    )


RATIO_NOTE = (
    "Candidate p50 divided by incumbent p50 within one cell; in brackets the {confidence:.0%} "
    "block bootstrap interval; n is the requests each side rests on and, in brackets, the "
    "blocks of consecutive requests the interval resampled. The verdict is the candidate's: "
    "better or worse where the interval excludes 1, read in each metric's direction (rates "
    "are better higher, times lower), no difference where it includes 1."
)


def ratios(c: Comparison, sources: Sources) -> str:
    rows = []
    for cell in c.cells:
        journals = [a.sources["journal"] for a in cell.arms if "journal" in a.sources]
        for r in cell.ratios:
            ref = sources.ref(f"cells[{cell.id}].ratios[{r.candidate},{r.metric}]", journals)
            label = RATIO_LABELS.get(r.metric, r.metric)
            interval = fmt.ratio(r.ratio, r.low, r.high)
            sizes = (
                f"{r.n_incumbent} / {r.n_candidate} ({r.blocks_incumbent} / {r.blocks_candidate})"
            )
            rows.append([cell.id, r.candidate, label, r.verdict, interval, sizes, ref])
    if not rows:
        return "No cell is comparable on the incumbent and a candidate, so no ratio is given."
    confidence = next(r.confidence for cell in c.cells for r in cell.ratios)
    header = [
        "cell",
        "candidate",
        "metric",
        "verdict",
        "ratio [interval]",
        "n (blocks) inc. / cand.",
        "source",
    ]
    return RATIO_NOTE.format(confidence=confidence) + "\n\n" + table(header, rows)


def _recipe_rows(c: Comparison) -> list[list[str]]:
    r = [a.recipe for a in c.arms]
    return [
        _row("Checkpoint", [x.checkpoint or "—" for x in r]),
        _row("Revision", [x.revision or "—" for x in r]),
        _row("Image (pinned)", [a.image or f"{a.lane} lane" for a in c.arms]),
        _row("Weight format", [x.weight_format or "—" for x in r]),
        _row(
            "TP / DCP",
            [f"{x.tensor_parallel or '—'} / {x.decode_context_parallel or 1}" for x in r],
        ),
        _row(
            "KV / speculation", [f"{x.kv_cache_dtype or '—'} / {x.speculation or '—'}" for x in r]
        ),
        _row("Prefill batch token budget", [fmt.count(x.max_num_batched_tokens) for x in r]),
        _row(
            "Configured context / sequences",
            [f"{fmt.count(x.max_model_len)} / {fmt.count(x.max_num_seqs)}" for x in r],
        ),
        _row("Memory settings", [a.recipe.memory or a.memory_limit or "—" for a in c.arms]),
        _row("Env knobs", [_knobs(a.env_knobs) for a in c.arms]),
        _row("Notes", [x.notes or "—" for x in r]),
    ]


def _knobs(env: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in env.items()) or "—"


def _lane_rows(c: Comparison) -> list[list[str]]:
    def simulator(a: ArmEntry) -> str:
        sim = a.simulator
        return f"profile {sim.profile}, time_scale {sim.time_scale:g}" if sim else "no"

    def load(a: ArmEntry) -> str:
        gib = a.boot.model_load_gib if a.boot else None
        return fmt.MISSING if gib is None else f"{gib:.2f} GiB"

    ids = [a.identity for a in c.arms]
    return [
        _row("Simulator", [simulator(a) for a in c.arms]),
        _row("Identity verified", ["yes" if i.verified else "no" for i in ids]),
        _row("Boot-log quantization", [", ".join(i.quantizations) or "—" for i in ids]),
        _row("/v1/models id / root", [f"{i.served_model} / {i.root}" for i in ids]),
        _row("Model load (boot log)", [load(a) for a in c.arms]),
    ]


def recipes(c: Comparison) -> str:
    return table(["Property", *_arm_names(c)], _recipe_rows(c) + _lane_rows(c))


LATENCY_HEADER = [
    "cell", "arm", "disposition", "ok", "input p50", "output p50", "TTFO p50/p95",
    "TTFT p50/p95", "E2E p50/p95", "TPOT p50/p95", "eff. prefill p50/p95 tok/s",
    "decode p50/p95 tok/s", "aggregate tok/s", "source",
]  # fmt: skip
ENGINE_HEADER = [
    "cell", "arm", "disposition", "engine prefill / queue mean", "max running / waiting",
    "max KV usage", "preemptions", "lane memory peak", "host stalls (longest) / client CPU wait",
    "source",
]  # fmt: skip


def _pair(a: ArmCell, metric: str, render: Callable[[float | None], str]) -> str:
    return f"{render(_p(a, metric))} / {render(_p(a, metric, 'p95'))}"


def _engine_cells(a: ArmCell) -> list[str]:
    e = a.engine
    if e is None:
        return [fmt.MISSING] * 4
    return [
        f"{fmt.seconds(e.prefill_mean_s)} / {fmt.seconds(e.queue_mean_s)}",
        f"{fmt.count(e.max_running)} / {fmt.count(e.max_waiting)}",
        fmt.percent(e.max_kv_usage_perc),
        fmt.count(e.preemptions),
    ]


def _latency_row(cell: CellEntry, a: ArmCell, ref: str) -> list[str]:
    tokens = [s.p50 if s else None for s in (a.input_tokens, a.completion_tokens)]
    return [
        cell.id,
        a.arm,
        disposition(a),
        str(a.statuses.get("ok", 0)),
        *(fmt.count(t) for t in tokens),
        *(_pair(a, k, fmt.seconds) for k in ("ttfo_s", "ttft_s", "e2e_s", "tpot_s")),
        *(_pair(a, k, fmt.rate) for k in ("effective_prefill_tps", "decode_tps")),
        fmt.rate(a.aggregate_output_tps),
        ref,
    ]


def _engine_row(cell: CellEntry, a: ArmCell, ref: str) -> list[str]:
    return [
        cell.id,
        a.arm,
        disposition(a),
        *_engine_cells(a),
        fmt.gib(a.memory.lane_peak_bytes if a.memory else None),
        _stalls(a),
        ref,
    ]


def _stalls(a: ArmCell) -> str:
    s = a.host_stalls
    if s is None:
        return fmt.MISSING
    wait = fmt.percent(s.client_wait_share)
    return f"{s.stalls} ({s.longest_ms:.0f} ms) / {wait}"


def measurements(c: Comparison, sources: Sources) -> str:
    """Two tables of the same rows (requests and latency; engine, memory and host), narrow
    enough to read without scrolling sideways."""
    latency, engine = [], []
    for cell in c.cells:
        for a in (a for a in cell.arms if a.metrics):
            files = [a.sources[k] for k in ("summary", "telemetry") if k in a.sources]
            ref = sources.ref(f"cells[{cell.id}].arms[{a.arm}]", files)
            latency.append(_latency_row(cell, a, ref))
            engine.append(_engine_row(cell, a, ref))
    return table(LATENCY_HEADER, latency) + "\n\n" + table(ENGINE_HEADER, engine)


def dispositions(c: Comparison) -> str:
    counts = [
        [
            a.arm,
            *(str(x) for x in (a.planned, a.accepted, a.failed, a.blocked, a.pending, a.scored_ok)),
        ]
        for a in c.coverage.arms
    ]
    count_header = ["arm", "planned", "accepted", "failed", "blocked", "pending", "successful"]
    return table(count_header, counts) + "\n\n" + attempts(c)


def attempts(c: Comparison) -> str:
    """Every attempt of every cell run: a rerun's earlier attempts stay, marked superseded."""
    rows = [
        [
            cell.id,
            a.arm,
            str(h.attempt),
            h.started_at.isoformat(sep=" ", timespec="seconds") if h.started_at else fmt.MISSING,
            h.disposition,
            h.reason_code or "",
            h.reason or "",
            "stands" if h.stands else "superseded by a later attempt",
        ]
        for cell in c.cells
        for a in cell.arms
        for h in a.history
    ]
    rows += [
        [cell.id, a.arm, fmt.MISSING, fmt.MISSING, "pending", "", "not run yet", ""]
        for cell in c.cells
        for a in cell.arms
        if not a.history
    ]
    header = ["cell", "arm", "attempt", "started", "disposition", "reason code", "reason",
              "verdict"]  # fmt: skip
    return "Attempts of each cell run, oldest first:\n\n" + table(header, rows)
