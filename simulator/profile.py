"""Engine profiles: TOML files read with ``tomllib`` into frozen dataclasses.

A profile describes one serving recipe as the simulator plays it: what the boot
log and ``/v1/models`` say (``[model]``), the scheduler's limits (``[engine]``),
how long steps take (``[timing]``), speculative decoding (``[speculative]``),
what the model answers (``[output]``), the GPUs it runs on (``[gpu]``, virtual:
what faceoff's virtual NVML reads) and injected faults (``[faults]``).
Durations are simulated seconds; the server divides them by its time scale.

The simulator runs in a bare Debian Python (stdlib, aiohttp, prometheus_client),
so this module validates by hand instead of with pydantic. Every error names the
file, the table and the key, and says what is expected.
"""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.logits import LogitSpec

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
EFFORTS = ("low", "medium", "high", "max")
REASONING_FIELDS = ("reasoning", "reasoning_content")

Curve = tuple[tuple[float, float], ...]


class ProfileError(ValueError):
    """A profile or an override that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class ModelSpec:
    served_model_name: str
    model_path: str
    quantization: str  # "none" for an unquantized checkpoint
    dtype: str = "bfloat16"
    max_model_len: int = 8192
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    vllm_version: str = "0.32.0"
    model_load_gib: float = 1.0
    kv_cache_gib: float = 1.0


@dataclass(frozen=True)
class EngineSpec:
    block_size: int
    kv_cache_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    long_prefill_token_threshold: int = 0  # 0 = no per-request cap on a prefill chunk
    max_num_partial_prefills: int = 0  # 0 = as many prefills per step as the budget allows
    # a decode-first scheduler (not vLLM's): while any sequence decodes, a step's prefill
    # chunks are capped at this many tokens, sparing the decoders; 0 = off
    decode_first_prefill_cap: int = 0
    enable_prefix_caching: bool = True
    preemption: bool = True  # False: admit only when prompt + max_tokens fit, never preempt
    max_queued_requests: int = 0  # 0 = unbounded; above it new requests get 429

    @property
    def num_gpu_blocks(self) -> int:
        return self.kv_cache_tokens // self.block_size


@dataclass(frozen=True)
class TimingSpec:
    prefill_rate: Curve  # (context tokens, prefill tok/s), interpolated linearly
    decode_step_ms: Curve  # (batch size, ms per decode step), interpolated linearly
    startup_s: float = 0.0
    jit_warmup_s: float = 0.0  # paid once, by the first step that has work
    step_overhead_ms: float = 0.0
    decode_ms_per_1k_context: float = 0.0  # extra per step, per 1,000 tokens resident
    mixed_prefill_factor: float = 1.0  # prefill cost multiplier in steps that also decode


@dataclass(frozen=True)
class SpeculativeSpec:
    method: str = "none"
    num_speculative_tokens: int = 0
    acceptance_structured: float = 0.0  # per-position acceptance probability
    acceptance_prose: float = 0.0


@dataclass(frozen=True)
class OutputSpec:
    reasoning: bool = True
    reasoning_field: str = "reasoning"
    default_reasoning_effort: str = "high"
    reasoning_tokens_low: float = 40.0  # median reasoning tokens per effort level
    reasoning_tokens_medium: float = 80.0
    reasoning_tokens_high: float = 110.0
    reasoning_tokens_max: float = 150.0
    visible_tokens_median: float = 60.0
    length_sigma: float = 0.3
    needle_verified_tokens: int = 0  # 0 = the whole context

    def reasoning_median(self, effort: str) -> float:
        return float(getattr(self, f"reasoning_tokens_{effort}"))


@dataclass(frozen=True)
class GpuSpec:
    """One virtual GPU; the default is the Blackwell card of the published comparison."""

    name: str = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    memory_gib: float = 95.6
    idle_w: float = 90.0
    max_w: float = 600.0
    max_sm_clock_mhz: int = 2617
    throttled_sm_clock_mhz: int = 1500  # while a throttle fault holds
    overhead_gib: float = 1.5  # CUDA context, activations and graphs, per device


@dataclass(frozen=True)
class FaultSpec:
    crash_after_requests: int = 0  # 0 = never; request N+1 finds the process exiting
    crash_exit_code: int = 1
    oom_after_requests: int = 0  # like crash, but the process is SIGKILLed (137)
    hang_after_requests: int = 0  # request N+1 freezes the engine and every endpoint
    metrics_delay_s: float = 0.0  # real seconds, not scaled: scrapes are measured in real time
    tokenize_delay_s: float = 0.0  # real seconds before /tokenize answers (a remote lane)
    metrics_status: int = 200  # e.g. 500 for a failing /metrics
    metrics_garbage: bool = False  # /metrics answers 200 with bytes that are not Prometheus text
    missing_families: tuple[str, ...] = ()
    error_rate: float = 0.0
    error_status: int = 500
    refuse_above_tokens: int = 0  # 0 = no refusal below max_model_len
    contract_overrun: bool = False  # ignore "exactly N words" and run to max_tokens
    needle_miss_above_tokens: int = 0  # 0 = off; longer prompts recall a garbled marker
    # virtual GPU faults (simulator/gpu.py), triggered like the crash: after N arrivals
    gpu_throttle_after_requests: int = 0  # 0 = never: thermal slowdown, SM clock down
    gpu_throttle_requests: int = 0  # arrivals the throttle lasts; 0 = until the lane stops
    gpu_foreign_after_requests: int = 0  # 0 = never: a foreign process on the first GPU
    gpu_foreign_gib: float = 2.0  # the memory it holds
    gpu_xid_after_requests: int = 0  # 0 = never: Xid 48 and an uncorrected ECC error
    health_status: int = 200  # what /health answers once ready, e.g. 503 for a sick engine
    seed: int = 0  # for the error-rate draws


@dataclass(frozen=True)
class Profile:
    name: str
    model: ModelSpec
    engine: EngineSpec
    timing: TimingSpec
    speculative: SpeculativeSpec = field(default_factory=SpeculativeSpec)
    output: OutputSpec = field(default_factory=OutputSpec)
    gpu: GpuSpec = field(default_factory=GpuSpec)
    faults: FaultSpec = field(default_factory=FaultSpec)
    logits: LogitSpec = field(default_factory=LogitSpec)
    legacy_names: bool = False


SECTIONS: dict[str, type] = {
    "model": ModelSpec,
    "engine": EngineSpec,
    "timing": TimingSpec,
    "speculative": SpeculativeSpec,
    "output": OutputSpec,
    "gpu": GpuSpec,
    "faults": FaultSpec,
    "logits": LogitSpec,
}


def profile_path(name_or_path: str) -> Path:
    """A bundled profile by name (``tiny``) or a TOML file by path."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml":
        return candidate
    return PROFILE_DIR / f"{name_or_path}.toml"


def bundled_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def load_profile(name_or_path: str) -> Profile:
    path = profile_path(name_or_path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        known = ", ".join(bundled_profiles())
        raise ProfileError(f"{path}: no such profile. Bundled profiles: {known}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: malformed TOML: {exc}") from exc
    return profile_from_dict(raw, name=path.stem, where=str(path))


def profile_from_dict(raw: dict[str, Any], *, name: str, where: str) -> Profile:
    unknown = sorted(set(raw) - set(SECTIONS) - {"legacy_names"})
    if unknown:
        raise ProfileError(
            f"{where}: unknown table(s) {unknown}; expected {sorted(SECTIONS)} or legacy_names"
        )
    parts = {
        key: build_section(cls, raw.get(key, {}), f"{where} [{key}]")
        for key, cls in SECTIONS.items()
    }
    legacy = coerce(raw.get("legacy_names", False), bool, f"{where} legacy_names")
    profile = Profile(name=name, legacy_names=legacy, **parts)
    check_profile(profile, where)
    return profile


def build_section(cls: type, table: Any, where: str) -> Any:
    if not isinstance(table, dict):
        raise ProfileError(f"{where}: expected a table of keys, got {table!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(table) - set(names))
    if unknown:
        raise ProfileError(f"{where}: unknown key(s) {unknown}; known keys are {names}")
    values = {key: coerce(value, hints[key], f"{where} {key}") for key, value in table.items()}
    try:
        return cls(**values)
    except TypeError as exc:  # a required key is missing
        raise ProfileError(f"{where}: {exc}; required keys are {required_keys(cls)}") from exc


def required_keys(cls: type) -> list[str]:
    missing = dataclasses.MISSING
    return [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is missing and f.default_factory is missing
    ]


def coerce(value: Any, kind: Any, where: str) -> Any:
    """Check one TOML value against a field type; ints are accepted where floats are."""
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    elif kind == tuple[str, ...]:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
    elif kind == Curve:
        return coerce_curve(value, where)
    raise ProfileError(f"{where}: expected {type_name(kind)}, got {value!r}")


def coerce_curve(value: Any, where: str) -> Curve:
    ok = isinstance(value, list) and len(value) > 0
    pairs = []
    for point in value if ok else []:
        if not (isinstance(point, list) and len(point) == 2):
            ok = False
            break
        pairs.append((coerce(point[0], float, where), coerce(point[1], float, where)))
    xs = [x for x, _ in pairs]
    if not ok or xs != sorted(set(xs)) or any(y <= 0 for _, y in pairs):
        raise ProfileError(
            f"{where}: expected a curve [[x, y], ...] with increasing x and positive y, "
            f"got {value!r}"
        )
    return tuple(pairs)


def type_name(kind: Any) -> str:
    names = {bool: "true/false", int: "an integer", float: "a number", str: "a string"}
    if kind in names:
        return names[kind]
    return "a list of strings" if kind == tuple[str, ...] else "a curve [[x, y], ...]"


def check_profile(profile: Profile, where: str) -> None:
    """Value rules that types cannot express."""
    problems = [
        *positive(profile.engine, ("block_size", "kv_cache_tokens", "max_num_seqs"), where),
        *positive(profile.engine, ("max_num_batched_tokens",), where),
        *positive(profile.model, ("max_model_len", "tensor_parallel_size"), where),
    ]
    if profile.engine.num_gpu_blocks * profile.engine.block_size < profile.model.max_model_len:
        problems.append(
            f"{where} [engine] kv_cache_tokens: {profile.engine.kv_cache_tokens} cannot hold "
            f"one max_model_len ({profile.model.max_model_len}) request; vLLM refuses to start"
        )
    if profile.engine.max_num_batched_tokens <= profile.speculative.num_speculative_tokens:
        problems.append(
            f"{where} [engine] max_num_batched_tokens: must exceed "
            "[speculative] num_speculative_tokens, or no decode step fits the budget"
        )
    if profile.output.reasoning_field not in REASONING_FIELDS:
        problems.append(f"{where} [output] reasoning_field: use one of {REASONING_FIELDS}")
    if profile.output.default_reasoning_effort not in EFFORTS:
        problems.append(f"{where} [output] default_reasoning_effort: use one of {EFFORTS}")
    problems += check_rates(profile, where)
    problems += check_gpu(profile.gpu, where)
    if problems:
        raise ProfileError("; ".join(problems))


def positive(spec: Any, keys: tuple[str, ...], where: str) -> list[str]:
    section = next(k for k, cls in SECTIONS.items() if isinstance(spec, cls))
    return [
        f"{where} [{section}] {key}: must be ≥ 1, got {getattr(spec, key)}"
        for key in keys
        if getattr(spec, key) < 1
    ]


def check_rates(profile: Profile, where: str) -> list[str]:
    spec, faults = profile.speculative, profile.faults
    problems = []
    for key in ("acceptance_structured", "acceptance_prose"):
        if not 0.0 <= getattr(spec, key) <= 1.0:
            problems.append(f"{where} [speculative] {key}: must be within 0..1")
    if not 0.0 <= faults.error_rate <= 1.0:
        problems.append(f"{where} [faults] error_rate: must be within 0..1")
    problems += check_logits(profile.logits, where)
    if profile.timing.mixed_prefill_factor < 1.0:
        problems.append(f"{where} [timing] mixed_prefill_factor: must be ≥ 1")
    return problems


def check_logits(logits: LogitSpec, where: str) -> list[str]:
    problems = []
    if not 0.0 < logits.rest_mass < 1.0:
        problems.append(f"{where} [logits] rest_mass: must be within 0..1, both excluded")
    if logits.candidates < 2:
        problems.append(f"{where} [logits] candidates: must be ≥ 2")
    for key in ("kld", "noise_kld"):
        if getattr(logits, key) < 0:
            problems.append(f"{where} [logits] {key}: must be ≥ 0 (nats)")
    if logits.max_logprobs < -1:
        problems.append(f"{where} [logits] max_logprobs: must be ≥ 0, or -1 for no cap")
    return problems


def check_gpu(gpu: GpuSpec, where: str) -> list[str]:
    problems = []
    if not 0 < gpu.idle_w <= gpu.max_w:
        problems.append(f"{where} [gpu] idle_w: must be > 0 and at most max_w ({gpu.max_w})")
    if not 0 < gpu.throttled_sm_clock_mhz <= gpu.max_sm_clock_mhz:
        problems.append(
            f"{where} [gpu] throttled_sm_clock_mhz: must be > 0 and at most max_sm_clock_mhz "
            f"({gpu.max_sm_clock_mhz})"
        )
    if gpu.memory_gib <= 0:
        problems.append(f"{where} [gpu] memory_gib: must be > 0")
    return problems


def parse_assignment(text: str, where: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ProfileError(f"{where}: expected key=value, got {text!r}")
    return key.strip(), value.strip()


def parse_value(text: str) -> Any:
    """A command-line value read as a TOML value; bare words are strings."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def with_overrides(profile: Profile, assignments: list[str], *, where: str) -> Profile:
    """Apply ``section.key=value`` assignments (``--set``), validated like the file."""
    raw = as_raw(profile)
    for text in assignments:
        dotted, value = parse_assignment(text, where)
        section, _, key = dotted.partition(".")
        if dotted == "legacy_names":
            raw["legacy_names"] = parse_value(value)
            continue
        if section not in SECTIONS or not key:
            raise ProfileError(
                f"{where}: {dotted!r} is not section.key; sections are {sorted(SECTIONS)}"
            )
        raw[section][key] = parse_value(value)
    return profile_from_dict(raw, name=profile.name, where=f"{profile.name} with {where}")


def as_raw(profile: Profile) -> dict[str, Any]:
    raw: dict[str, Any] = {"legacy_names": profile.legacy_names}
    for key in SECTIONS:
        table = dataclasses.asdict(getattr(profile, key))
        raw[key] = {k: to_toml_value(v) for k, v in table.items()}
    return raw


def to_toml_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return [to_toml_value(v) for v in value]
    return value
