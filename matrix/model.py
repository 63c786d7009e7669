"""The campaign spec: arms, cells, thresholds, families, stop policy.

Format history of ``schema_version``:
  1 — first release.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from faceoff.artifact import Spec
from matrix.agentic import Agentic, check_agentic, last_turn_tokens
from matrix.arrival import MAX_BURSTINESS, MAX_RATE, Arrival, Ramp, Sweep, check_load
from matrix.engines import VLLM, Binding, binding_conflicts, runs_vllm
from matrix.families import DEFAULT_REGISTRY, FAMILY_NAMES, FamilySpec, FamilyStatus
from matrix.quality import QualityImport, check_quality
from matrix.rule import Rule
from matrix.search import NeedleSearch, check_search
from matrix.slo import Slo
from matrix.traffic import Dataset, Prefix, Trace, check_traffic, reuses_prefixes
from matrix.variants import check_variants

SLUG = r"^[a-z0-9][a-z0-9._-]{0,62}$"
HOST_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$")  # a name or an IPv4 address
DIGEST_REF = re.compile(r"^(?P<repo>[^@\s]+)@sha256:(?P<hex>[0-9a-f]{64})$")
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|PRIVATE_KEY|CREDENTIAL)", re.I
)
# Upper bounds far beyond any real campaign, so a typo (10^12 requests) is an error, not a hang.
MAX_TOKENS = 10_000_000  # input_tokens, max_tokens: ten times the longest contexts served today
MAX_CONCURRENCY = 4096
MAX_REQUESTS = 100_000  # scored requests of one cell on one arm
MAX_WARMUPS = 10_000
MAX_DEADLINE_S = 7 * 24 * 3600.0  # a week, for any deadline
MIN_PERIOD_S = 0.01  # sampling faster than this measures the sampler, not the engine
MAX_PERIOD_S = 60.0  # slower, a cell of minutes has too few samples to judge coverage
# Words of a command-line flag that takes a secret (--api-key, --hf-token, --password=…);
# "tokens" and "tokenizer" are other words, and a flag naming a file holds no secret.
SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "credential", "credentials", "apikey"}
)
SECRET_PAIRS = frozenset({"api-key", "private-key"})
FILE_WORDS = frozenset({"file", "path", "dir"})
# The simulator's [faults] keys (simulator/profile.py FaultSpec; a test keeps the two equal).
SIMULATOR_FAULTS = frozenset(
    {
        "crash_after_requests",
        "crash_exit_code",
        "oom_after_requests",
        "hang_after_requests",
        "metrics_delay_s",
        "metrics_status",
        "metrics_garbage",
        "missing_families",
        "error_rate",
        "error_status",
        "refuse_above_tokens",
        "contract_overrun",
        "needle_miss_above_tokens",
        "tokenize_delay_s",
        "seed",
    }
)


def secret_flag(arg: str) -> bool:
    """Whether a command-line argument is a flag that takes a secret."""
    if not arg.startswith("-"):
        return False
    words = arg.lstrip("-").split("=", 1)[0].lower().replace("_", "-").split("-")
    pairs = {f"{a}-{b}" for a, b in itertools.pairwise(words)}
    named = bool(SECRET_WORDS & set(words) or SECRET_PAIRS & pairs)
    return named and words[-1] not in FILE_WORDS


class Role(StrEnum):
    INCUMBENT = "incumbent"
    CANDIDATE = "candidate"


class LaneKind(StrEnum):
    DOCKER = "docker"
    PROCESS = "process"
    SIMULATOR = "simulator"


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


class StopPolicy(StrEnum):
    CONTINUE = "continue"  # a failed cell blocks nothing
    BLOCK_WORKLOAD = "block_workload"  # a failed cell blocks later cells of its kind, every arm
    STOP_CAMPAIGN = "stop_campaign"  # a failed cell blocks every later cell


class Mount(Spec):
    source: str = Field(description="Host path of the model or data directory.")
    target: str = Field(description="Path inside the lane.")
    read_only: bool = Field(default=True, description="Model mounts are read-only by default.")


def omitted_at(default: object) -> Callable[[object], bool]:
    """Leave a field added after the first release out of the dump while it holds its default,
    so a matrix frozen before the field existed keeps its id (the id hashes the dump)."""
    return lambda value: value == default


class Probes(Spec):
    smoke_requests: int = Field(default=2, ge=1, description="Direct smoke completions, N of N.")
    json_smoke_requests: int = Field(default=2, ge=1, description="JSON smoke completions, N of N.")
    smoke_max_tokens: int = Field(default=32, ge=1, description="max_tokens of each smoke probe.")
    json_smoke_max_tokens: int = Field(
        default=512,
        ge=1,
        exclude_if=omitted_at(512),
        description="max_tokens of each JSON smoke: room for a reasoning model's reasoning first.",
    )
    json_smoke: bool = Field(
        default=True,
        exclude_if=omitted_at(True),
        description="Run the JSON smoke; false needs json_smoke_off_reason.",
    )
    json_smoke_off_reason: str | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="Why this arm's model cannot be asked for JSON; the receipt quotes it.",
    )
    chat_template_kwargs: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        exclude_if=omitted_at({}),
        description="Sent with each smoke, e.g. {enable_thinking = false} where the template "
        "supports it.",
    )
    poll_interval_s: float = Field(default=1.0, gt=0, description="Readiness polling interval.")

    @model_validator(mode="after")
    def _json_smoke_off_has_reason(self) -> Probes:
        reason = (self.json_smoke_off_reason or "").strip()
        if not self.json_smoke and not reason:
            raise ValueError(
                "json_smoke = false needs json_smoke_off_reason = '<why this model cannot emit "
                "JSON>'; the restoration receipt quotes it"
            )
        if self.json_smoke and reason:
            raise ValueError(
                "json_smoke_off_reason is set but json_smoke is on; add json_smoke = false "
                "or drop the reason"
            )
        return self


class Router(Spec):
    url: str = Field(description="Base URL of the operator's router, for the authenticated smoke.")
    token_env: str = Field(description="Name of the env var holding the router bearer token.")
    model: str | None = Field(
        default=None, description="Model name as routed; default served_model."
    )
    drain_url: str | None = Field(default=None, description="POST here to drain the lane.")
    readmit_url: str | None = Field(default=None, description="POST here to readmit the lane.")
    drain_command: list[str] | None = Field(default=None, description="Or run this to drain.")
    readmit_command: list[str] | None = Field(default=None, description="Or run this to readmit.")
    smoke_requests: int = Field(default=2, ge=1, description="Authenticated router smokes, N of N.")


class SimulatorLane(Spec):
    profile: str = Field(
        description="Simulator profile name (simulator/profiles/<name>.toml) or path."
    )
    time_scale: float = Field(
        default=1.0, gt=0, le=1e6, description="Run the engine model N× faster."
    )
    faults: dict[str, float | int | str | bool | list[str]] = Field(
        default_factory=dict, description="Fault-injection overrides, as in the profile's [faults]."
    )
    legacy_names: bool = Field(default=False, description="Emit vLLM's deprecated metric names.")

    @field_validator("faults")
    @classmethod
    def _known_faults(
        cls, faults: dict[str, float | int | str | bool | list[str]]
    ) -> dict[str, float | int | str | bool | list[str]]:
        unknown = sorted(set(faults) - SIMULATOR_FAULTS)
        if unknown:
            known = ", ".join(sorted(SIMULATOR_FAULTS))
            raise ValueError(f"unknown simulator fault(s) {unknown}; known: {known}")
        return faults


class Recipe(Spec):
    """What the result card's recipe table shows; descriptive, never trusted for identity."""

    checkpoint: str | None = Field(default=None, description="Checkpoint repository or name.")
    revision: str | None = Field(default=None, description="Pinned checkpoint revision.")
    weight_format: str | None = Field(default=None, description="e.g. 'EXL3 4 bpw', 'NVFP4'.")
    tensor_parallel: int | None = Field(default=None, ge=1, description="TP degree.")
    decode_context_parallel: int | None = Field(default=None, ge=1, description="DCP degree.")
    kv_cache_dtype: str | None = Field(default=None, description="KV cache dtype.")
    speculation: str | None = Field(default=None, description="Speculative decoding, or 'none'.")
    max_num_batched_tokens: int | None = Field(default=None, ge=1, description="Prefill budget.")
    max_model_len: int | None = Field(default=None, ge=1, description="Configured context.")
    max_num_seqs: int | None = Field(default=None, ge=1, description="Configured sequences.")
    memory: str | None = Field(default=None, description="Memory settings in words.")
    notes: str | None = Field(default=None, description="Anything else a reviewer must know.")


class Arm(Spec):
    name: str = Field(pattern=SLUG, description="Arm name, unique in the matrix.")
    role: Role = Field(description="Exactly one arm is the incumbent.")
    lane: LaneKind = Field(description="How the recipe is brought up.")
    image: str | None = Field(default=None, description="Pinned image, repo@sha256:<64 hex>.")
    command: list[str] | None = Field(default=None, description="Process command / container cmd.")
    engine: Literal["vllm", "other"] | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="'vllm': faceoff appends --host, --port and --served-model-name when the "
        "command line lacks them; 'other': launched as written. Unset: 'vllm' when the command "
        "runs `vllm … serve`.",
    )
    host: str = Field(default="127.0.0.1", description="Host the lane's API listens on.")
    port: int = Field(ge=1, le=65535, description="Port of the lane's OpenAI API and /metrics.")
    gpu_ids: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list, description="GPU indices the lane may use."
    )
    engine_args: list[str] = Field(default_factory=list, description="Engine command-line flags.")
    env: dict[str, str] = Field(default_factory=dict, description="Env knobs (no secrets).")
    secrets: dict[str, str] = Field(
        default_factory=dict,
        description="Lane env var -> operator env var that holds its value; never inlined.",
    )
    mounts: list[Mount] = Field(default_factory=list, description="Bind mounts.")
    memory_limit: str | None = Field(
        default=None, description="Container memory limit, e.g. '52g'."
    )
    shm_size: str | None = Field(default=None, description="Container /dev/shm size, e.g. '16g'.")
    served_model: str = Field(description="Model id the lane must report in /v1/models.")
    expected_quantization: str | None = Field(
        default=None, description="Value of the boot log's quantization= field, e.g. 'exl3'."
    )
    weights_manifest: str | None = Field(
        default=None, description="Model directory whose index/config files form the manifest."
    )
    expected_weights_sha256: str | None = Field(
        default=None, pattern=r"^[0-9a-f]{64}$", description="Pinned weights-manifest hash."
    )
    startup_deadline_s: float = Field(
        default=900.0, gt=0, le=MAX_DEADLINE_S, description="Readiness deadline."
    )
    warmups: int = Field(
        default=0, ge=0, le=MAX_WARMUPS, description="Warmup requests after each start; unscored."
    )
    probes: Probes = Field(default_factory=Probes, description="Smoke and JSON smoke settings.")
    router: Router | None = Field(default=None, description="The operator's router, if any.")
    recipe: Recipe = Field(default_factory=Recipe, description="Recipe facts for the result card.")
    simulator: SimulatorLane | None = Field(default=None, description="For lane = 'simulator'.")

    @property
    def base_url(self) -> str:
        """Where the lane's OpenAI API, /health and /metrics answer."""
        host = f"[{self.host}]" if _is_ipv6(self.host) else self.host  # URLs bracket IPv6
        return f"http://{host}:{self.port}"

    @property
    def runs_vllm(self) -> bool:
        """Declared ``engine = "vllm"``, or undeclared with a command that runs ``vllm … serve``."""
        return self.engine == VLLM or (self.engine is None and runs_vllm(self.command or []))

    @property
    def binding(self) -> Binding:
        return Binding(self.host, self.port, self.served_model)

    @field_validator("host")
    @classmethod
    def _host_only(cls, host: str) -> str:
        if not (HOST_NAME.match(host) or _is_ipv6(host)):
            raise ValueError(
                f"host {host!r} is not a host name or address; give the host alone, "
                "e.g. '127.0.0.1' (no scheme, no path; the port goes in port)"
            )
        return host

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str | None) -> str | None:
        if image is not None and not DIGEST_REF.match(image):
            raise ValueError(
                f"image {image!r} is not pinned by digest; write it as repo@sha256:<64 hex> "
                "(find the digest with `docker inspect --format '{{index .RepoDigests 0}}' IMAGE`)"
            )
        return image

    @field_validator("env")
    @classmethod
    def _no_inline_secrets(cls, env: dict[str, str]) -> dict[str, str]:
        for key in env:
            if SECRET_NAME.search(key):
                raise ValueError(
                    f"env knob {key!r} looks like a secret; move it to [arms.secrets] as "
                    f'{key} = "NAME_OF_OPERATOR_ENV_VAR" so its value never enters the matrix'
                )
        return env

    @model_validator(mode="after")
    def _lane_needs(self) -> Arm:
        if self.lane is LaneKind.DOCKER and self.image is None:
            raise ValueError("a docker lane needs image = 'repo@sha256:<64 hex>'")
        if self.lane is LaneKind.PROCESS and not self.command:
            raise ValueError("a process lane needs command = [...]")
        if self.lane is LaneKind.SIMULATOR and self.simulator is None:
            raise ValueError("a simulator lane needs a [arms.simulator] table with a profile")
        if self.simulator is not None and self.engine is not None:
            raise ValueError(
                "an arm with an [arms.simulator] table runs the simulator; drop engine"
            )
        return self

    @model_validator(mode="after")
    def _no_secret_flags(self) -> Arm:
        """A flag that takes a secret would put it in the frozen matrix, the lane record
        and the bundle: it must come from the operator's environment instead."""
        for field, args in (("command", self.command or []), ("engine_args", self.engine_args)):
            flag = next((a for a in args if secret_flag(a)), None)
            if flag is not None:
                name = flag.split("=", 1)[0]
                raise ValueError(
                    f"{field} of arm {self.name!r} passes a secret on the command line "
                    f"({name}); it would be recorded in the bundle. Put its value in "
                    "[arms.secrets] as the lane env var the engine reads instead (vLLM: "
                    "VLLM_API_KEY, HF_TOKEN)"
                )
        return self

    @model_validator(mode="after")
    def _binds_its_port(self) -> Arm:
        if not self.runs_vllm:
            return self
        conflicts = binding_conflicts([*(self.command or []), *self.engine_args], self.binding)
        if conflicts:
            raise ValueError(
                f"arm {self.name!r} runs vLLM with {'; '.join(conflicts)}; faceoff makes the "
                "engine listen on the arm's host and port under served_model, so remove these "
                "flags from command/engine_args or set host, port and served_model to match"
            )
        return self


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
        "(matrix/variants.py); the prompts stay the same.",
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
            raise ValueError("a controlled cell needs output_words (the strict output contract)")
        if self.concurrency > self.requests:
            raise ValueError(
                f"concurrency {self.concurrency} exceeds requests {self.requests}; "
                "a closed loop needs at least one request per stream"
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


def _check_shape(cell: Cell) -> None:
    """Workload kinds whose request pattern needs a particular concurrency or count."""
    if cell.kind is WorkloadKind.HEAD_OF_LINE and cell.concurrency < 2:
        raise ValueError(
            "head_of_line needs concurrency ≥ 2: one stream for the long cold prefill, "
            "the others for short requests behind it"
        )
    if cell.kind is WorkloadKind.SESSION_REUSE and cell.requests % 2:
        raise ValueError(
            f"session_reuse runs sessions of two turns; requests = {cell.requests} is odd"
        )
    if cell.kind is WorkloadKind.SESSION_REUSE and cell.requests < 2 * cell.concurrency:
        raise ValueError(
            f"session_reuse at concurrency {cell.concurrency} needs at least "
            f"{2 * cell.concurrency} requests (a session of two turns per stream)"
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


def _check_arrival(cell: Cell) -> None:
    check_load(cell)
    if not cell.open_loop:
        return
    if cell.kind in CLOSED_ONLY:
        raise ValueError(
            f"a {cell.kind.value} cell runs its pattern as a closed loop; drop arrival, rate "
            "and sweep"
        )
    if cell.scored_requests > MAX_REQUESTS:
        raise ValueError(
            f"requests = {cell.requests} at each of {cell.steps} sweep steps is "
            f"{cell.scored_requests} requests, more than {MAX_REQUESTS}; fewer requests or steps"
        )


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

    @property
    def namespace(self) -> str:
        return self.prompt_namespace or self.name

    @model_validator(mode="after")
    def _not_its_own_successor(self) -> CampaignSpec:
        if self.successor_of == self.name:
            raise ValueError(
                f"successor_of names the campaign itself ({self.name!r}); name the closed "
                "campaign whose cells it reuses, or rename this one"
            )
        return self


STALL_THRESHOLD_MS = 20.0
MAX_REQUEST_STALL_MS = 50.0
MAX_STALLED_REQUESTS = 0.1
MAX_CLIENT_CPU_WAIT = 0.1
MAX_SCHEDULE_LAG_MS = 100.0


class Thresholds(Spec):
    max_error_rate: float = Field(default=0.0, ge=0, le=1, description="Errored/scored requests.")
    max_oom: int = Field(default=0, ge=0, description="OOM observations allowed.")
    max_preemptions: int = Field(default=0, ge=0, description="Engine preemptions allowed.")
    max_refusals: int = Field(default=0, ge=0, description="Refused requests allowed.")
    counter_tolerance_tokens: int = Field(default=0, ge=0, description="Reconciliation slack.")
    cold_cache_max_hit_ratio: float = Field(
        default=0.0, ge=0, le=1, description="Prefix-cache hits/queries allowed in a cold cell."
    )
    input_tolerance: float = Field(default=0.05, ge=0, le=1, description="Actual vs target input.")
    needle_max_missed: float = Field(
        default=0.0,
        ge=0,
        le=1,
        exclude_if=omitted_at(0.0),
        description="Share of answered scored needle requests allowed to miss the marker.",
    )
    engine_period_s: float = Field(
        default=0.5, ge=MIN_PERIOD_S, le=MAX_PERIOD_S, description="Engine scrape cadence."
    )
    memory_period_s: float = Field(
        default=2.0, ge=MIN_PERIOD_S, le=MAX_PERIOD_S, description="GPU/host sampling cadence."
    )
    min_coverage: float = Field(
        default=0.95, ge=0, le=1, description="Share of ticks sampled (on time or late)."
    )
    max_consecutive_misses: int = Field(
        default=2, ge=0, description="Ticks in a row never sampled, failed or without the family."
    )
    # Host stalls (docs/guards.md "Host stalls"); defaults chosen from measurements there.
    stall_threshold_ms: float = Field(
        default=STALL_THRESHOLD_MS,
        gt=0,
        exclude_if=omitted_at(STALL_THRESHOLD_MS),
        description="A host-stall monitor wake-up this late (ms) is recorded as a stall.",
    )
    max_request_stall_ms: float = Field(
        default=MAX_REQUEST_STALL_MS,
        ge=0,
        exclude_if=omitted_at(MAX_REQUEST_STALL_MS),
        description="A scored request overlapping more stall than this (ms) is affected.",
    )
    max_stalled_requests: float = Field(
        default=MAX_STALLED_REQUESTS,
        ge=0,
        le=1,
        exclude_if=omitted_at(MAX_STALLED_REQUESTS),
        description="Share of scored requests affected by stalls beyond which the cell is blocked "
        "host_stall (any fewer affected are flagged).",
    )
    max_client_cpu_wait: float = Field(
        default=MAX_CLIENT_CPU_WAIT,
        ge=0,
        le=1,
        exclude_if=omitted_at(MAX_CLIENT_CPU_WAIT),
        description="The client's CPU wait as a share of the cell window beyond which the cell "
        "is blocked host_stall.",
    )
    max_schedule_lag_ms: float = Field(
        default=MAX_SCHEDULE_LAG_MS,
        gt=0,
        exclude_if=omitted_at(MAX_SCHEDULE_LAG_MS),
        description="Open loop: p99 of send − due (ms) over the scored requests beyond which "
        "the cell is blocked schedule_lag (the load offered was not the load declared).",
    )


class Families(Spec):
    not_applicable: dict[str, str] = Field(
        default_factory=dict, description="Family -> why it cannot exist on this campaign's hosts."
    )
    require: list[str] = Field(
        default_factory=list, description="Supplemental families this campaign requires."
    )

    @model_validator(mode="after")
    def _known(self) -> Families:
        for name in [*self.not_applicable, *self.require]:
            if name not in FAMILY_NAMES:
                raise ValueError(
                    f"unknown metric family {name!r}; known: {', '.join(sorted(FAMILY_NAMES))}"
                )
        return self

    def resolve(self) -> tuple[FamilySpec, ...]:
        """The registry as this campaign freezes it."""
        return tuple(self._resolve_one(fam) for fam in DEFAULT_REGISTRY)

    def _resolve_one(self, fam: FamilySpec) -> FamilySpec:
        if fam.name in self.not_applicable:
            return fam.model_copy(
                update={
                    "status": FamilyStatus.NOT_APPLICABLE,
                    "not_applicable_reason": self.not_applicable[fam.name],
                }
            )
        if fam.name in self.require:
            return fam.model_copy(update={"status": FamilyStatus.REQUIRED})
        return fam


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
    rule: Rule | None = Field(
        default=None,
        exclude_if=omitted_at(None),
        description="The declared decision rule (matrix/rule.py); None leaves the decision "
        "to the reviewer alone.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Matrix:
        incumbents = [a.name for a in self.arms if a.role is Role.INCUMBENT]
        if len(incumbents) != 1:
            raise ValueError(f"exactly one arm must have role = 'incumbent'; found {incumbents}")
        _unique("arm name", [a.name for a in self.arms])
        _unique("cell id", [c.id for c in self.cells])
        _unique("arm port", [f"{a.host}:{a.port}" for a in self.arms])
        names = {a.name for a in self.arms}
        for cell in self.cells:
            unknown = set(cell.arms or []) - names
            if unknown:
                raise ValueError(f"cell {cell.id!r} names unknown arms {sorted(unknown)}")
        _fits_context(self)
        if self.rule is not None:
            _rule_fits(self, self.rule)
        _sweeps_have_slo(self)
        check_variants(self.cells, [a.name for a in self.arms])
        check_quality(self.quality, [a.name for a in self.arms], incumbents[0])
        if self.campaign.aa:
            _same_recipe(self.arms)
        return self

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
        return [c for c in self.cells if c.arms is None or arm.name in c.arms]


def _fits_context(matrix: Matrix) -> None:
    """A cell's input plus the max_tokens it asks for must fit each arm's declared context:
    vLLM refuses a request whose prompt plus max_tokens exceeds max_model_len."""
    for arm in matrix.arms:
        limit = arm.recipe.max_model_len
        if limit is None:
            continue
        for cell in matrix.cells_for(arm):
            # a prefill probe asks for one token (workload/plan.py)
            output = 1 if cell.kind is WorkloadKind.PREFILL_PROBE else cell.sampling.max_tokens
            if cell.peak_input_tokens + output > limit:
                grown = (
                    f" (grown to {cell.peak_input_tokens} by the last turn)"
                    if cell.peak_input_tokens != cell.input_tokens
                    else ""
                )
                raise ValueError(
                    f"cell {cell.id!r}: input_tokens = {cell.input_tokens}{grown} plus "
                    f"max_tokens = {output} exceed arm {arm.name!r}'s recipe.max_model_len = "
                    f"{limit}, so the engine would refuse every request; lower input_tokens or "
                    "sampling.max_tokens, or leave the arm out of the cell (arms = [...])"
                )


def _rule_fits(matrix: Matrix, rule: Rule) -> None:
    """The rule names cells and kinds of this matrix, and a goodput criterion judges only
    cells that declare an SLO (goodput is measured against one)."""
    # a replicated cell may be named by the id it was written under (its prompt_id)
    names = {c.id for c in matrix.cells} | {c.prompt_id for c in matrix.cells}
    rule.check_against(names, [k.value for k in WorkloadKind])
    for criterion in rule.criteria:
        searches = [
            cell.id
            for cell in matrix.cells
            if cell.kind is WorkloadKind.NEEDLE_SEARCH
            and rule.counts({cell.id, cell.prompt_id}, cell.kind.value, criterion)
        ]
        if searches:
            raise ValueError(
                f"rule criterion on {criterion.metric} judges the needle_search cell(s) "
                f"{', '.join(searches)}, which have no latency samples; give the criterion "
                "(or the rule) kinds = [...] or cells = [...] without them"
            )
    for criterion in (c for c in rule.criteria if c.on_goodput):
        judged = [
            cell
            for cell in matrix.cells
            if rule.counts({cell.id, cell.prompt_id}, cell.kind.value, criterion)
        ]
        without = [cell.id for cell in judged if matrix.slo_of(cell) is None]
        if without:
            raise ValueError(
                f"rule criterion on {criterion.metric} judges cells without an SLO "
                f"({', '.join(without)}); declare campaign.slo or the cells' slo"
            )


def _sweeps_have_slo(matrix: Matrix) -> None:
    """A sweep reports the highest rate within SLO, so it needs one."""
    for cell in matrix.cells:
        if cell.sweep is not None and matrix.slo_of(cell) is None:
            raise ValueError(
                f"sweep cell {cell.id!r} has no SLO to judge its steps by; add [campaign.slo] "
                "or an slo table on the cells entry"
            )


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


AA_OWN_FIELDS = frozenset({"name", "role", "port"})  # what may differ between A/A arms


def _same_recipe(arms: list[Arm]) -> None:
    """An A/A campaign's arms differ only in name, role and port."""
    incumbent = next(a for a in arms if a.role is Role.INCUMBENT)
    recipe = incumbent.model_dump(exclude=set(AA_OWN_FIELDS))
    for arm in arms:
        theirs = arm.model_dump(exclude=set(AA_OWN_FIELDS))
        differ = sorted(k for k in recipe.keys() | theirs.keys() if recipe.get(k) != theirs.get(k))
        if differ:
            raise ValueError(
                f"campaign.aa = true needs every arm to run the incumbent's recipe; arm "
                f"{arm.name!r} differs from {incumbent.name!r} in {', '.join(differ)}"
            )


def _unique(what: str, values: list[str]) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"duplicate {what} {value!r}")
        seen.add(value)
