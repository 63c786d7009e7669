"""The campaign spec: the matrix of arms and cells, with its campaign, thresholds and rule.

Format history of ``schema_version``:
  1 — first release.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, Field, StrictBool, field_validator, model_validator

from faceoff.artifact import Spec
from matrix.arm import Arm, Role
from matrix.cell import Cell, WorkloadKind, check_variants
from matrix.coherence.arm_fields import check_arm_fields
from matrix.coherence.cross_table import check_tables
from matrix.families import Families
from matrix.fidelity import (
    FidelityCell,
    check_fidelity,
    check_fidelity_criteria,
    check_logprobs,
    vllm_logprobs_cap,
)
from matrix.fields import SLUG, FieldError, omitted_at
from matrix.night_window import Window
from matrix.quality import QualityImport, check_quality
from matrix.rule import Criterion, Rule
from matrix.slo import Slo
from matrix.thresholds import Thresholds
from matrix.traffic import SourceFile


class StopPolicy(StrEnum):
    CONTINUE = "continue"  # a failed cell blocks nothing
    BLOCK_WORKLOAD = "block_workload"  # a failed cell blocks later cells of its kind, every arm
    STOP_CAMPAIGN = "stop_campaign"  # a failed cell blocks every later cell

    @property
    def sentence(self) -> str:
        return STOP_POLICY_WORDS[self]


STOP_POLICY_WORDS = {
    StopPolicy.CONTINUE: "a failed cell blocks nothing",
    StopPolicy.BLOCK_WORKLOAD: "a failed cell blocks the later cells of its kind, on every arm",
    StopPolicy.STOP_CAMPAIGN: "a failed cell blocks every later cell",
}


# How the load client's event loop waits for bytes while requests are in flight:
# sleep in select until the kernel wakes it, or spin (poll, never sleeping; a core of its own).
ClientReceive = Literal["sleep", "spin"]


class CampaignSpec(Spec):
    name: str = Field(pattern=SLUG, description="Campaign name; resuming is keyed on it.")
    seed: int = Field(description="Seed of prompts, sampling and bootstrap intervals.")
    prompt_namespace: str | None = Field(
        default=None, description="Prompt namespace; default name."
    )
    stop_policy: StopPolicy = Field(
        default=StopPolicy.BLOCK_WORKLOAD, description="After a failure."
    )
    description: str | None = Field(default=None, description="What the campaign asks.")
    aa: bool = Field(
        default=False,
        exclude_if=omitted_at(False),
        description="An A/A calibration: every arm runs the incumbent's recipe, so every ratio "
        "should be 1; the card says whether the instrument passed.",
    )
    slo: Slo | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Service-level objectives of every cell that declares none (goodput).",
    )
    successor_of: str | None = Field(
        default=None,
        pattern=SLUG,
        exclude_if=omitted_at(None),
        description="A closed campaign of the same ledger whose accepted cells this one reuses "
        "where their frozen content is unchanged (matrix/cell_content.py); the rest run.",
    )
    window: str | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="The night's window, 'HH:MM-HH:MM' in the schedule's timezone (the host's "
        "for `faceoff run`): the campaign must be over, incumbent restored, when it closes.",
    )
    deadline: AwareDatetime | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="An absolute end, with its UTC offset; with a window, the earlier counts.",
    )
    pilot: StrictBool | Literal["strict"] | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Before the first scored cell, each arm answers one request of each cell "
        "contract (journaled, never scored): true blocks the cells whose contract failed "
        "(pilot_failed), 'strict' stops the campaign there; unset: the flow's default (off "
        "for `faceoff run`, on in the scheduled deployment).",
    )
    fidelity_reference: str | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="The arm fidelity cells score every arm against; default the incumbent.",
    )
    client_receive: ClientReceive = Field(
        default="sleep",
        exclude_if=omitted_at("sleep"),
        description="How the load client waits for response bytes while requests are in "
        "flight: 'sleep' (the default) or 'spin', which polls its sockets without sleeping so "
        "each chunk is dated as it lands (no first token late by a wake-up), at the cost of a "
        "whole CPU core for the client: give it a core of its own.",
    )

    @property
    def namespace(self) -> str:
        return self.prompt_namespace or self.name

    @field_validator("window")
    @classmethod
    def _a_window(cls, window: str | None) -> str | None:
        if window is not None:
            Window.parse(window)
        return window

    @model_validator(mode="after")
    def _not_its_own_successor(self) -> CampaignSpec:
        if self.successor_of == self.name:
            raise FieldError(
                ("successor_of",),
                f"successor_of names the campaign itself ({self.name!r}); name the closed "
                "campaign whose cells it reuses, or rename this one",
            )
        return self


class Matrix(Spec):
    schema_version: Literal[1] = Field(default=1, description="Matrix format version.")
    campaign: CampaignSpec = Field(description="Name, seed, namespace, stop policy.")
    arms: list[Arm] = Field(min_length=2, description="Incumbent first by convention.")
    cells: list[Cell] = Field(min_length=1, description="Expanded cells.")
    thresholds: Thresholds = Field(default_factory=Thresholds, description="Validity thresholds.")
    families: Families = Field(default_factory=Families, description="Registry declarations.")
    protected_files: list[str] = Field(
        default_factory=list, description="Operator files whose sha256 must survive the campaign."
    )
    quality: list[QualityImport] = Field(
        default_factory=list,
        exclude_if=omitted_at([]),
        description="Evaluator results imported per arm, with tolerance bands (matrix/quality).",
    )
    fidelity: list[FidelityCell] = Field(
        default_factory=list,
        exclude_if=omitted_at([]),
        description="Fidelity cells: a pinned corpus scored on every arm against the "
        "reference (matrix/fidelity.py).",
    )
    rule: Rule | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="The declared decision rule (matrix/rule.py); without one the decision "
        "is the reviewer's alone.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Matrix:
        _one_incumbent(self.arms)
        _unique("arms", "name", "arm name", [a.name for a in self.arms])
        _unique("cells", "id", "cell id", [c.id for c in self.cells])
        _distinct_ports(self.arms)
        names = {a.name for a in self.arms}
        for index, cell in enumerate(self.cells):
            unknown = set(cell.arms or []) - names
            if unknown:
                raise FieldError(
                    ("cells", index, "arms"),
                    f"names unknown arms {sorted(unknown)}; known: {', '.join(sorted(names))}",
                )
        _fits_context(self)
        if self.rule is not None:
            _rule_fits(self, self.rule)
        _sweeps_have_slo(self)
        _sequential_judged(self)
        check_variants(self.cells, [a.name for a in self.arms])
        check_quality(self.quality, [a.name for a in self.arms], self.incumbent.name)
        self._fidelity_fits()
        if self.campaign.aa:
            _same_recipe(self.arms)
        for index, arm in enumerate(self.arms):
            check_arm_fields(arm, ("arms", index))
        check_tables(self)
        return self

    def _fidelity_fits(self) -> None:
        reference = self.campaign.fidelity_reference
        names = [a.name for a in self.arms]
        if reference is not None and reference not in names:
            raise FieldError(
                ("campaign", "fidelity_reference"), f"names no arm; known: {', '.join(names)}"
            )
        _reference_arms(self)
        limits = {a.name: a.max_model_len for a in self.arms}
        ids = {c.id for c in self.cells}
        check_fidelity(self.fidelity, limits, self.fidelity_reference.name, ids)
        caps = {a.name: vllm_logprobs_cap(a.engine_argv) for a in self.arms if a.runs_vllm}
        check_logprobs(self.fidelity, caps)
        if self.rule is not None:
            check_fidelity_criteria(self.rule.fidelity, [c.id for c in self.fidelity])

    @property
    def fidelity_reference(self) -> Arm:
        """The arm fidelity cells score against: the declared one, else the reference arm
        (``role = "reference"``), else the incumbent."""
        name = self.campaign.fidelity_reference
        if name is not None:
            return self.arm(name)
        return next((a for a in self.arms if a.role is Role.REFERENCE), self.incumbent)

    @property
    def reference_arms(self) -> list[Arm]:
        """Arms that serve fidelity cells only."""
        return [a for a in self.arms if a.role is Role.REFERENCE]

    def fidelity_arms(self, cell: FidelityCell) -> list[Arm]:
        """The arms a fidelity cell scores, the reference first."""
        scored = cell.arms or [a.name for a in self.arm_order()]
        reference = self.fidelity_reference
        return [reference, *(a for a in self.arm_order() if a.name in scored and a != reference)]

    @property
    def incumbent(self) -> Arm:
        return next(a for a in self.arms if a.role is Role.INCUMBENT)

    @property
    def candidates(self) -> list[Arm]:
        return [a for a in self.arms if a.role is Role.CANDIDATE]

    def arm(self, name: str) -> Arm:
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise KeyError(name)

    def arm_order(self) -> list[Arm]:
        """Incumbent first, then candidates in file order."""
        return [self.incumbent, *self.candidates]

    def slo_of(self, cell: Cell) -> Slo | None:
        """The SLO a cell is judged against: its own, else the campaign's."""
        return cell.slo or self.campaign.slo

    def cells_for(self, arm: Arm) -> list[Cell]:
        if arm.role is Role.REFERENCE:
            return []  # it serves fidelity cells only
        return [c for c in self.cells if c.arms is None or arm.name in c.arms]

    def arms_of(self, cell: Cell) -> list[Arm]:
        """The arms that run ``cell`` (a reference arm runs none)."""
        return [
            a
            for a in self.arms
            if a.role is not Role.REFERENCE and (cell.arms is None or a.name in cell.arms)
        ]


def _reference_arms(matrix: Matrix) -> None:
    """A reference arm is the fidelity reference and serves no speed cell; the reference is
    the incumbent or such an arm, never a candidate (a candidate is judged against it)."""
    references = [n for n, a in enumerate(matrix.arms) if a.role is Role.REFERENCE]
    if len(references) > 1:
        raise FieldError(("arms", references[1], "role"), "a second reference arm; one at most")
    chosen = matrix.fidelity_reference
    if chosen.role is Role.CANDIDATE:
        raise FieldError(
            ("campaign", "fidelity_reference"),
            f"names the candidate {chosen.name!r}: candidates are judged against the "
            "reference; name the incumbent or an arm with role = 'reference'",
        )
    for index in references:
        arm = matrix.arms[index]
        if not matrix.fidelity:
            raise FieldError(
                ("arms", index, "role"),
                f"arm {arm.name!r} is a reference but the matrix has no [[fidelity]] cell",
            )
        if arm is not chosen:
            raise FieldError(
                ("arms", index, "role"),
                f"arm {arm.name!r} is a reference but fidelity_reference names {chosen.name!r}",
            )
        named = [c.id for c in matrix.cells if c.arms and arm.name in c.arms]
        if named:
            raise FieldError(
                ("arms", index, "role"),
                f"reference arm {arm.name!r} is named by speed cells {named}; a reference "
                "serves fidelity cells only",
            )


def _fits_context(matrix: Matrix) -> None:
    """A cell's input plus the max_tokens it asks for must fit each arm's declared context:
    vLLM refuses a request whose prompt plus max_tokens exceeds max_model_len."""
    for arm in matrix.arms:
        limit = arm.max_model_len
        if limit is None or arm.role is Role.REFERENCE:
            continue
        for index, cell in enumerate(matrix.cells):
            if cell.arms is not None and arm.name not in cell.arms:
                continue
            if cell.context_tokens > limit:
                grown = (
                    f" (grown to {cell.peak_input_tokens} by the last turn)"
                    if cell.peak_input_tokens != cell.input_tokens
                    else ""
                )
                raise FieldError(
                    ("cells", index, "input_tokens"),
                    f"input_tokens = {cell.input_tokens}{grown} plus "
                    f"max_tokens = {cell.output_tokens} exceed arm {arm.name!r}'s "
                    f"{arm.max_model_len_words}, so the engine would refuse every request; "
                    "lower input_tokens or sampling.max_tokens, or leave the arm out of the "
                    "cell (arms = [...])",
                )


def _rule_fits(matrix: Matrix, rule: Rule) -> None:
    """The rule names cells, kinds and candidates of this matrix, judges every candidate it
    names, no criterion judges a needle search, a goodput criterion judges only cells
    that declare an SLO (goodput is measured against one), and an energy criterion only
    arms with GPU ids."""
    # a replicated cell may be named by the id it was written under (its prompt_id)
    names = {c.id for c in matrix.cells} | {c.prompt_id for c in matrix.cells}
    candidates = [arm.name for arm in matrix.candidates]
    rule.check_against(names, [k.value for k in WorkloadKind], candidates)
    unjudged = [c for c in rule.candidates or [] if not rule.judges(c)]
    if unjudged:
        raise FieldError(
            ("rule", "candidates"),
            f"names {unjudged}, which no criterion judges (each criterion's candidates leave "
            "them out); drop them or give a criterion that judges them",
        )
    for index, criterion in enumerate(rule.criteria):
        judged = [
            c for c in matrix.cells if rule.counts({c.id, c.prompt_id}, c.kind.value, criterion)
        ]
        searches = [c.id for c in judged if c.kind is WorkloadKind.NEEDLE_SEARCH]
        if searches:
            raise FieldError(
                ("rule", "criteria", index, "kinds"),
                f"the criterion on {criterion.metric} judges the needle_search cell(s) "
                f"{', '.join(searches)}, which have no latency samples; give the criterion "
                "(or the rule) kinds = [...] or cells = [...] without them",
            )
        without = [c.id for c in judged if criterion.on_goodput and matrix.slo_of(c) is None]
        if without:
            raise FieldError(
                ("rule", "criteria", index, "metric"),
                f"the criterion on {criterion.metric} judges cells without an SLO "
                f"({', '.join(without)}); declare campaign.slo or the cells' slo",
            )
        _energy_has_gpus(matrix, rule, criterion, index)


def _energy_has_gpus(matrix: Matrix, rule: Rule, criterion: Criterion, index: int) -> None:
    """An energy criterion compares the GPUs' joules, so every arm it compares has GPU ids."""
    if not criterion.on_energy:
        return
    judged = [a for a in matrix.candidates if criterion in rule.criteria_for(a.name)]
    compared = [matrix.incumbent, *judged]
    without = [a.name for a in compared if not a.gpu_ids]
    if without:
        raise FieldError(
            ("rule", "criteria", index, "metric"),
            f"the criterion on {criterion.metric} compares arms without GPU ids "
            f"({', '.join(without)}), whose energy is not measured; give them gpu_ids",
        )


def _sequential_judged(matrix: Matrix) -> None:
    """A sequential cell (replicates = "auto") runs its later passes while the rule's criteria
    in it are undecided, so the rule must judge it."""
    for cell in matrix.cells:
        if not cell.sequential or cell.pass_index > 1:
            continue
        names = {cell.id, cell.prompt_id}
        rule = matrix.rule
        if rule is None or not any(rule.counts(names, cell.kind.value, c) for c in rule.criteria):
            raise ValueError(
                f'cell {cell.prompt_id!r} has replicates = "auto", but no [rule] criterion judges '
                "it: a sequential cell runs another pass only while the rule's criteria in it are "
                "undecided; declare a [rule] that counts it, or give it replicates = K"
            )


def _sweeps_have_slo(matrix: Matrix) -> None:
    """A sweep reports the highest rate within SLO, so it needs one."""
    for index, cell in enumerate(matrix.cells):
        if cell.sweep is not None and matrix.slo_of(cell) is None:
            raise FieldError(
                ("cells", index, "sweep"),
                "a sweep cell with no SLO to judge its steps by; add [campaign.slo] or an slo "
                "table on the cells entry",
            )


AA_OWN_FIELDS = frozenset({"name", "role", "port"})  # what may differ between A/A arms


def _same_recipe(arms: list[Arm]) -> None:
    """An A/A campaign's arms differ only in name, role and port."""
    incumbent = next(a for a in arms if a.role is Role.INCUMBENT)
    recipe = incumbent.model_dump(exclude=set(AA_OWN_FIELDS))
    for index, arm in enumerate(arms):
        theirs = arm.model_dump(exclude=set(AA_OWN_FIELDS))
        differ = sorted(k for k in recipe.keys() | theirs.keys() if recipe.get(k) != theirs.get(k))
        if differ:
            raise FieldError(
                ("arms", index, differ[0]),
                f"campaign.aa = true needs every arm to run the incumbent's recipe; arm "
                f"{arm.name!r} differs from {incumbent.name!r} in {', '.join(differ)}",
            )


def _one_incumbent(arms: list[Arm]) -> None:
    incumbents = [n for n, a in enumerate(arms) if a.role is Role.INCUMBENT]
    if not incumbents:
        raise FieldError(
            ("arms",), "no arm has role = 'incumbent'; exactly one must (the recipe compared with)"
        )
    if len(incumbents) > 1:
        names = [arms[n].name for n in incumbents]
        raise FieldError(
            ("arms", incumbents[1], "role"),
            f"a second incumbent; exactly one arm may have role = 'incumbent', found {names}",
        )


def _unique(table: str, field: str, what: str, values: list[str]) -> None:
    seen: set[str] = set()
    for index, value in enumerate(values):
        if value in seen:
            raise FieldError((table, index, field), f"duplicate {what} {value!r}")
        seen.add(value)


def changed_sources(frozen: Matrix, current: Matrix) -> list[str]:
    """Per cell of both matrices, the source file whose bytes changed since it was frozen."""
    now = {cell.id: cell for cell in current.cells}
    found = []
    for cell in frozen.cells:
        was, other = _source(cell), _source(now[cell.id]) if cell.id in now else None
        if was is not None and other is not None and was.sha256 != other.sha256:
            found.append(
                f"cell {cell.id}: {other.file} now hashes to {other.sha256}, but the campaign "
                f"was frozen with {was.sha256}"
            )
    corpora = {cell.id: cell.corpus for cell in current.fidelity}
    for scored in frozen.fidelity:
        other = corpora.get(scored.id)
        if other is not None and other.sha256 != scored.corpus.sha256:
            found.append(
                f"fidelity cell {scored.id}: {other.file} now hashes to {other.sha256}, but "
                f"the campaign was frozen with {scored.corpus.sha256}"
            )
    return found


def _source(cell: Cell) -> SourceFile | None:
    return cell.dataset or cell.trace


def _distinct_ports(arms: list[Arm]) -> None:
    """Two arms on one host and port would be one server (the host-aware check, names
    resolved, is the loader's)."""
    for index, arm in enumerate(arms):
        other = next((o for o in arms[:index] if (o.host, o.port) == (arm.host, arm.port)), None)
        if other is not None:
            raise FieldError(
                ("arms", index, "port"),
                f"arms {other.name!r} and {arm.name!r} both listen on {arm.host}:{arm.port}; "
                "give each arm its own port",
            )
