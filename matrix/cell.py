"""A cell: workload kind × input × concurrency × requests, run on each arm as a matched pair,
with the checks of its shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from faceoff.artifact import Spec
from matrix.agentic import Agentic
from matrix.arrival import MAX_BURSTINESS, MAX_RATE, Arrival, Ramp, Sweep
from matrix.fields import (
    MAX_CONCURRENCY,
    MAX_DEADLINE_S,
    MAX_REQUESTS,
    MAX_TOKENS,
    MAX_WARMUPS,
    SLUG,
    FieldError,
    omitted_at,
)
from matrix.search import NeedleSearch
from matrix.slo import Slo
from matrix.traffic import PREFIXABLE, Dataset, Prefix, Trace


class WorkloadKind(StrEnum):
    NATURAL = "natural"
    CONTROLLED = "controlled"
    CAPACITY_EDGE = "capacity_edge"
    PREFILL_PROBE = "prefill_probe"
    DECODE_STRUCTURED = "decode_structured"
    DECODE_PROSE = "decode_prose"
    NEEDLE = "needle"
    HEAD_OF_LINE = "head_of_line"
    SESSION_REUSE = "session_reuse"
    NEEDLE_SEARCH = "needle_search"
    AGENTIC = "agentic"
    DATASET = "dataset"
    TRACE = "trace"


# Whether requests that stopped at max_tokens unasked enter a cell's statistics.
LengthRule = Literal["exclude", "include"]


class Sampling(Spec):
    temperature: float = Field(default=0.6, ge=0, description="Sampling temperature.")
    top_p: float = Field(default=0.95, gt=0, le=1, description="Nucleus sampling.")
    max_tokens: int = Field(
        default=16384, ge=1, le=MAX_TOKENS, description="Maximum completion tokens."
    )
    reasoning_effort: str | None = Field(
        default=None, description="Sent as chat_template_kwargs.reasoning_effort when set."
    )
    ignore_eos: bool = Field(default=False, description="Ask for exact output lengths.")
    seed: bool = Field(
        default=True,
        exclude_if=omitted_at(True),
        description="Send each request a seed derived from the campaign seed; false sends none "
        "(vLLM's CPU build crashes on a seeded request whose prefill spans engine steps).",
    )


class Replicate(Spec):
    """One of the K windows a replicated cell runs in (``replicates = K`` on its entry)."""

    of: str = Field(pattern=SLUG, description="Id of the cell as written, before replication.")
    index: int = Field(ge=1, description="Which replicate, from 1; runs in pass ``index``.")
    count: int = Field(ge=2, description="Replicates of the cell in all (K).")
    sequential: bool = Field(
        default=False,
        exclude_if=omitted_at(False),
        description='Set by replicates = "auto": the K passes are a sequential design\'s '
        "looks; a pass runs only while the rule's criteria in the cell are undecided.",
    )


class Cell(Spec):
    id: str = Field(pattern=SLUG, description="Cell id, unique in the matrix.")
    kind: WorkloadKind = Field(description="Workload kind (ARCHITECTURE §3).")
    input_tokens: int = Field(ge=1, le=MAX_TOKENS, description="Nominal input target in tokens.")
    concurrency: int = Field(
        ge=1,
        le=MAX_CONCURRENCY,
        description="Client streams in flight (closed loop); the bound on requests in flight "
        "(open loop).",
    )
    requests: int = Field(
        ge=1, le=MAX_REQUESTS, description="Scored requests on each arm (of each sweep step)."
    )
    warmups: int = Field(
        default=0, ge=0, le=MAX_WARMUPS, description="Unscored warmups before the cell."
    )
    sampling: Sampling = Field(default_factory=Sampling, description="Request parameters.")
    deadline_s: float = Field(
        default=1200.0, gt=0, le=MAX_DEADLINE_S, description="Outer deadline of the cell."
    )
    request_deadline_s: float | None = Field(
        default=None, gt=0, le=MAX_DEADLINE_S, description="Per request."
    )
    output_words: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="Strict output contract of a controlled cell.",
    )
    needle_depth: float = Field(default=0.5, ge=0, le=1, description="Marker depth for needle.")
    variants: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        exclude_if=omitted_at({}),
        description="Sampling field -> arm -> value: what differs by arm by design "
        "(matrix/cell.py); the prompts stay the same.",
    )
    session_order: Literal["back_to_back", "after_another"] = Field(
        default="back_to_back",
        exclude_if=omitted_at("back_to_back"),
        description="session_reuse: turn 2 right after its turn 1, or after another session's "
        "turn 1 on the same stream (returning to a session once another has run).",
    )
    length_finishes: LengthRule = Field(
        default="exclude",
        exclude_if=omitted_at("exclude"),
        description="Scored requests that stopped at max_tokens unasked (status length_limit): "
        "counted and shown always; 'include' also puts them in the statistics.",
    )
    arms: list[str] | None = Field(
        default=None, min_length=1, description="Arms that run it; default all."
    )
    slo: Slo | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Service-level objectives of this cell; default the campaign's.",
    )
    arrival: Arrival = Field(
        default=Arrival.CLOSED,
        exclude_if=omitted_at(Arrival.CLOSED),
        description="closed (concurrency streams back to back), poisson or constant (open loop "
        "at rate, or at each rate of the sweep).",
    )
    rate: float | None = Field(
        default=None,
        gt=0,
        le=MAX_RATE,
        exclude_if=omitted_at(None),
        description="Open loop: requests per second.",
    )
    sweep: Sweep | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="A sweep cell: requests open-loop requests at each rate of this ladder.",
    )
    replicate: Replicate | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Set by replicates = K: which of the K windows this cell is.",
    )
    search: NeedleSearch | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="needle_search: the input range bisected, its resolution and probe budget.",
    )
    agentic: Agentic | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="agentic: turns of each conversation and tokens of each tool result.",
    )
    burstiness: float | None = Field(
        default=None,
        gt=0,
        le=MAX_BURSTINESS,
        exclude_if=omitted_at(None),
        description="Gamma arrivals: the gaps' shape (1 is Poisson, below 1 burstier).",
    )
    ramp: Ramp | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Open loop: the rate moves from ramp.start to ramp.end over the cell.",
    )
    dataset: Dataset | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="dataset: the prompt file, its format and sha256 (matrix/traffic.py).",
    )
    trace: Trace | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="trace: the trace file replayed, its format, sha256 and time scale.",
    )
    prefix: Prefix | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Shared system prompts: tokens each, groups of them.",
    )

    @model_validator(mode="after")
    def _contract(self) -> Cell:
        if self.kind is WorkloadKind.CONTROLLED and self.output_words is None:
            raise FieldError(
                ("output_words",),
                "a controlled cell needs output_words (the strict output contract)",
            )
        if self.concurrency > self.requests:
            raise FieldError(
                ("concurrency",),
                f"concurrency {self.concurrency} exceeds requests {self.requests}; "
                "a closed loop needs at least one request per stream",
            )
        _check_shape(self)
        check_search(self)
        check_agentic(self)
        check_traffic(self)
        _check_arrival(self)
        return self

    @property
    def open_loop(self) -> bool:
        return self.arrival is not Arrival.CLOSED

    @property
    def steps(self) -> int:
        """Open-loop runs of the cell: a sweep's ladder, else one."""
        return self.sweep.step_count if self.sweep is not None else 1

    @property
    def scored_requests(self) -> int:
        """Scored requests on each arm, every sweep step together."""
        return self.requests * self.steps

    @property
    def prompt_id(self) -> str:
        """The id prompts are drawn under: replicates of a cell share one prompt vector, so
        that what differs between them is the window, not the prompts."""
        return self.replicate.of if self.replicate else self.id

    @property
    def sequential(self) -> bool:
        """Whether it is a pass of a sequential cell (replicates = "auto")."""
        return self.replicate is not None and self.replicate.sequential

    @property
    def pass_index(self) -> int:
        """The pass of the campaign the cell runs in: replicate k runs in pass k."""
        return self.replicate.index if self.replicate else 1

    @property
    def cold(self) -> bool:
        """Whether the prefix cache must stay cold (a conversation's later turns find its
        earlier ones cached: session reuse and agentic cells are warm by design, and so are
        cells whose prompts share prefixes: a trace, shared system prompts)."""
        return self.kind not in WARM_BY_DESIGN and not reuses_prefixes(self)

    @property
    def peak_input_tokens(self) -> int:
        """The largest nominal input of the cell: an agentic cell's last turn."""
        return last_turn_tokens(self) or self.input_tokens

    @property
    def output_tokens(self) -> int:
        """The completion tokens a request asks room for (a prefill probe asks for one:
        workload/plan.py)."""
        return 1 if self.kind is WorkloadKind.PREFILL_PROBE else self.sampling.max_tokens

    @property
    def context_tokens(self) -> int:
        """The context its longest request needs: vLLM refuses one whose prompt plus
        max_tokens exceeds max_model_len."""
        return self.peak_input_tokens + self.output_tokens


def _check_shape(cell: Cell) -> None:
    """Workload kinds whose request pattern needs a particular concurrency or count."""
    if cell.kind is WorkloadKind.HEAD_OF_LINE and cell.concurrency < 2:
        raise FieldError(
            ("concurrency",),
            "head_of_line needs concurrency ≥ 2: one stream for the long cold prefill, "
            "the others for short requests behind it",
        )
    if cell.kind is WorkloadKind.SESSION_REUSE and cell.requests % 2:
        raise FieldError(
            ("requests",),
            f"session_reuse runs sessions of two turns; requests = {cell.requests} is odd",
        )
    if cell.kind is WorkloadKind.SESSION_REUSE and cell.requests < 2 * cell.concurrency:
        raise FieldError(
            ("requests",),
            f"session_reuse at concurrency {cell.concurrency} needs at least "
            f"{2 * cell.concurrency} requests (a session of two turns per stream)",
        )


# Kinds whose requests depend on each other's timing or answers: a closed loop.
CLOSED_ONLY = frozenset(
    {
        WorkloadKind.HEAD_OF_LINE,
        WorkloadKind.SESSION_REUSE,
        WorkloadKind.NEEDLE_SEARCH,
        WorkloadKind.AGENTIC,
    }
)

WARM_BY_DESIGN = frozenset({WorkloadKind.SESSION_REUSE, WorkloadKind.AGENTIC})

# Kinds that each answer one question of the field reports (docs/evidence.md "Probe answers"),
# some of which a model may fail by what it is (a needle a random-weight model cannot recall),
# not by how it is served. Dataset and trace cells replay traffic: no answer is checked.
PROBE_KINDS = frozenset(WorkloadKind) - {
    WorkloadKind.NATURAL,
    WorkloadKind.CONTROLLED,
    WorkloadKind.CAPACITY_EDGE,
    WorkloadKind.DATASET,
    WorkloadKind.TRACE,
}


def _check_arrival(cell: Cell) -> None:
    check_load(cell)
    if not cell.open_loop:
        return
    if cell.kind in CLOSED_ONLY:
        raise FieldError(
            ("arrival",),
            f"a {cell.kind.value} cell runs its pattern as a closed loop; drop arrival, rate "
            "and sweep",
        )
    if cell.scored_requests > MAX_REQUESTS:
        raise FieldError(
            ("requests",),
            f"requests = {cell.requests} at each of {cell.steps} sweep steps is "
            f"{cell.scored_requests} requests, more than {MAX_REQUESTS}; fewer requests or steps",
        )


def check_agentic(cell: Cell) -> None:
    """An agentic cell has a shape and runs whole conversations at C1; else ValueError."""
    shape = cell.agentic
    if cell.kind.value != "agentic":
        if shape is not None:
            raise FieldError(
                ("agentic",), f"only an agentic cell has a transcript (kind is {cell.kind})"
            )
        return
    if shape is None:
        raise FieldError(
            ("agentic",),
            "an agentic cell needs agentic = { turns, tool_result_tokens } (turns of each "
            "conversation, tokens of each tool result)",
        )
    if cell.concurrency != 1:
        raise FieldError(
            ("concurrency",),
            f"concurrency = {cell.concurrency}: an agentic cell replays one conversation at a "
            "time (C1); set concurrency = 1",
        )
    if cell.requests % shape.turns:
        raise FieldError(
            ("requests",),
            f"requests = {cell.requests} is not a whole number of {shape.turns}-turn "
            f"conversations; give a multiple of agentic.turns",
        )


def last_turn_tokens(cell: Cell) -> int:
    """The nominal input of the last turn: turn 1 and every tool result (the assistant's
    planned tool calls add a few tokens more)."""
    shape = cell.agentic
    return cell.input_tokens + (shape.turns - 1) * shape.tool_result_tokens if shape else 0


def check_search(cell: Cell) -> None:
    """A needle_search cell has a search, and what it repeats agrees with it; else ValueError."""
    search = cell.search
    if cell.kind.value != "needle_search":
        if search is not None:
            raise FieldError(
                ("search",), f"only a needle_search cell searches (kind is {cell.kind})"
            )
        return
    if search is None:
        raise FieldError(
            ("search",),
            "a needle_search cell needs search = { low, high, step, budget } (input tokens of "
            "the two ends, the resolution, the probes at most)",
        )
    said = (("input_tokens", cell.input_tokens, "high", search.high),
            ("requests", cell.requests, "budget", search.budget),
            ("concurrency", cell.concurrency, "", 1),
            ("warmups", cell.warmups, "", 0))  # fmt: skip
    for field, value, source, expected in said:
        if value != expected:
            whence = f"search.{source} = {expected}" if source else f"{expected} for a search"
            raise FieldError(
                (field,),
                f"{field} = {value} but a needle_search cell's {field} is {whence}; "
                f"drop {field} from the entry",
            )


# Declared sampling variants (``variants`` on a cell): a matched A/B of a request parameter
# (seed 003's reasoning effort, ``high`` against ``max``) must send both arms the same prompts,
# so a cell declares what differs by arm, and an undeclared per-arm difference is what pair
# integrity refuses. An arm the variant does not name keeps the cell's own value.
VARIANT_FIELDS = frozenset({"reasoning_effort"})


def check_variants(cells: Sequence[Cell], arms: Sequence[str]) -> None:
    """Each variant names a field that may vary and arms that run the cell; else FieldError."""
    for index, cell in enumerate(cells):
        for field, values in cell.variants.items():
            where = ("cells", index, "variants", field)
            if field not in VARIANT_FIELDS:
                raise FieldError(
                    where, f"cannot vary by arm; only {', '.join(sorted(VARIANT_FIELDS))} may"
                )
            runs = set(cell.arms or arms)
            unknown = sorted(set(values) - runs)
            if unknown:
                raise FieldError(where, f"names {unknown}, which do not run the cell")


def sampling_for(cell: Cell, arm: str) -> Sampling:
    """The cell's sampling as ``arm`` sends it."""
    update = {field: values[arm] for field, values in cell.variants.items() if arm in values}
    return cell.sampling.model_copy(update=update) if update else cell.sampling


def rate_label(cell: Cell) -> str:
    """An open-loop cell's rate in a stratum's name: ``8rps``, ``sweep``, ``ramp-2-8rps``, or a
    trace's speed ``x10`` (its recorded times, ten times faster)."""
    if cell.sweep is not None:
        return "sweep"
    if cell.ramp is not None:
        return f"ramp-{cell.ramp.start:g}-{cell.ramp.end:g}rps"
    if cell.rate is not None:
        return f"{cell.rate:g}rps"
    scale = cell.trace.time_scale if cell.trace is not None else 1.0
    return f"x{scale:g}"


def check_load(cell: Cell) -> None:
    """The load-shape fields agree with the cell's arrival, and its arrivals fit its deadline."""
    if not cell.open_loop:
        given = _given(cell, "rate", "sweep", "ramp", "burstiness")
        if given:
            raise FieldError(
                ("arrival",),
                f'{" and ".join(given)} need an open-loop arrival: add arrival = "poisson" or '
                '"constant" (or "gamma" with a burstiness)',
            )
        return
    if cell.arrival is Arrival.TRACE:
        given = _given(cell, "rate", "sweep", "ramp", "burstiness")
        if given:
            raise FieldError(
                (given[0],),
                f"a trace cell sends at its recorded times; drop {', '.join(given)} (speed it "
                "up with trace.time_scale)",
            )
        return
    _check_burstiness(cell)
    sources = _given(cell, "rate", "sweep", "ramp")
    if len(sources) != 1:
        has = f"not both: it has {' and '.join(sources)}" if sources else "it has none"
        raise FieldError(
            ("rate",),
            f"an open-loop cell (arrival = {cell.arrival.value!r}) needs rate = <requests/s> "
            f"or a [cells.sweep] ladder or a [cells.ramp], one of them; {has}",
        )
    _check_span(cell)


def _given(cell: Cell, *names: str) -> list[str]:
    return [name for name in names if getattr(cell, name) is not None]


def _check_burstiness(cell: Cell) -> None:
    gamma = cell.arrival is Arrival.GAMMA
    if gamma and cell.burstiness is None:
        raise FieldError(
            ("burstiness",),
            'arrival = "gamma" needs burstiness = <shape> (1 is Poisson, below 1 burstier)',
        )
    if not gamma and cell.burstiness is not None:
        raise FieldError(
            ("burstiness",),
            f'burstiness shapes gamma arrivals; set arrival = "gamma" (it is '
            f"{cell.arrival.value!r}) or drop burstiness",
        )


def _check_span(cell: Cell) -> None:
    if cell.ramp is not None:
        scheduled_s, rates = cell.ramp.duration_s(cell.requests), f"a ramp {cell.ramp.start:g} → "
        rates += f"{cell.ramp.end:g}"
    else:
        ladder = [cell.rate] if cell.rate is not None else (cell.sweep.rates if cell.sweep else [])
        scheduled_s, rates = sum((cell.requests - 1) / r for r in ladder or []), f"{ladder}"
    if scheduled_s >= cell.deadline_s:
        raise FieldError(
            ("deadline_s",),
            f"the arrivals alone span {scheduled_s:.0f} s ({cell.requests} requests per step at "
            f"{rates} req/s), beyond deadline_s = {cell.deadline_s:g}; raise deadline_s, or "
            "give fewer requests or higher rates",
        )


def check_traffic(cell: Cell) -> None:
    """A dataset or trace cell has its source, a prefix opens independent prompts; else
    ValueError."""
    kind = cell.kind.value
    for name, table in (("dataset", cell.dataset), ("trace", cell.trace)):
        if (kind == name) != (table is not None):
            raise FieldError(
                (name,),
                f"a {name} cell needs a [cells.{name}] table with its file and format"
                if table is None
                else f"only a {name} cell has one (kind is {kind})",
            )
    if (kind == "trace") != (cell.arrival.value == "trace"):
        raise FieldError(
            ("arrival",),
            'a trace cell sends at its recorded times: arrival = "trace" (the loader sets it), '
            "and no other cell has that arrival",
        )
    if cell.prefix is not None:
        _check_prefix(cell, cell.prefix)


def _check_prefix(cell: Cell, prefix: Prefix) -> None:
    if cell.kind.value not in PREFIXABLE:
        raise FieldError(
            ("prefix",),
            f"a {cell.kind.value} cell has no independent prompts to share a system "
            f"prompt; kinds with one: {', '.join(sorted(PREFIXABLE))}",
        )
    if prefix.tokens >= cell.input_tokens:
        raise FieldError(
            ("prefix", "tokens"),
            f"prefix.tokens = {prefix.tokens} leaves no room in input_tokens = "
            f"{cell.input_tokens}; the shared system prompt is part of each prompt",
        )


def reuses_prefixes(cell: Cell) -> bool:
    """Whether the cell's prompts share prefixes by design (its prefix cache is warm)."""
    dataset, trace = cell.dataset, cell.trace
    return (
        (trace is not None and trace.format == "mooncake")  # an Azure trace shares nothing
        or cell.prefix is not None
        or (dataset is not None and not dataset.nonce)
    )
