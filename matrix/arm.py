"""An arm: the recipe a lane brings up (an image by digest or a command, engine flags, env,
mounts), where it listens, and how it is probed.
The same concept at another layer: ``flows.campaign.arm``.
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from faceoff.artifact import Spec
from matrix.engines import (
    MAX_MODEL_LEN_FLAG,
    VLLM,
    Binding,
    binding_conflicts,
    max_model_len_flag,
    model_argument,
    runs_vllm,
)
from matrix.fields import MAX_DEADLINE_S, MAX_WARMUPS, SLUG, FieldError, omitted_at
from matrix.secrets import secret_in, secret_name

HOST_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$")  # a name or an IPv4 address

DIGEST_REF = re.compile(r"^(?P<repo>[^@\s]+)@sha256:(?P<hex>[0-9a-f]{64})$")


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
        "health_status",
        "needle_miss_above_tokens",
        "tokenize_delay_s",
        "gpu_throttle_after_requests",
        "gpu_throttle_requests",
        "gpu_foreign_after_requests",
        "gpu_foreign_gib",
        "gpu_xid_after_requests",
        "seed",
    }
)


class Role(StrEnum):
    INCUMBENT = "incumbent"
    CANDIDATE = "candidate"
    REFERENCE = "reference"  # serves fidelity cells only: never a speed arm, never promoted


class LaneKind(StrEnum):
    DOCKER = "docker"
    PROCESS = "process"
    SIMULATOR = "simulator"


class Mount(Spec):
    source: str = Field(description="Host path of the model or data directory.")
    target: str = Field(description="Path inside the lane.")
    read_only: bool = Field(default=True, description="Model mounts are read-only by default.")


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
            raise FieldError(
                ("json_smoke_off_reason",),
                "json_smoke = false needs json_smoke_off_reason = '<why this model cannot emit "
                "JSON>'; the restoration receipt quotes it",
            )
        if self.json_smoke and reason:
            raise FieldError(
                ("json_smoke",),
                "json_smoke_off_reason is set but json_smoke is on; add json_smoke = false "
                "or drop the reason",
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
    role: Role = Field(
        description="Exactly one arm is the incumbent; a reference arm serves fidelity cells "
        "only (the checkpoint they are scored against), never a speed cell."
    )
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
    port: int = Field(
        ge=1,
        le=65535,
        strict=True,  # a quoted port is a typo of the matrix, not a number to guess at
        description="Port of the lane's OpenAI API and /metrics.",
    )
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

    @property
    def engine_argv(self) -> list[str]:
        """The engine's flags as it reads them: the command's, then engine_args (last wins)."""
        return [*(self.command or []), *self.engine_args]

    @property
    def model(self) -> str | None:
        """The model a vLLM arm serves, as its command names it (a container's command
        follows the image's ``vllm serve`` entrypoint); None for other engines."""
        if not self.runs_vllm:
            return None
        return model_argument(self.engine_argv, entrypoint_serves=self.lane is LaneKind.DOCKER)

    @property
    def max_model_len(self) -> int | None:
        """The context the engine serves: ``recipe.max_model_len``, else ``--max-model-len``.

        Derived, never written back: the frozen content keeps what the matrix says, so a
        matrix giving only the flag keeps its id (``_one_context`` refuses disagreement)."""
        return self.recipe.max_model_len or max_model_len_flag(self.engine_argv)

    @property
    def max_model_len_words(self) -> str:
        """``max_model_len`` and where it is written, as an error names it."""
        if self.recipe.max_model_len is not None:
            return f"recipe.max_model_len = {self.recipe.max_model_len}"
        return f"{MAX_MODEL_LEN_FLAG} {self.max_model_len} in its engine flags"

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
        for key, value in env.items():
            if secret_name(key) or secret_in([value]):
                raise ValueError(
                    f"env knob {key!r} looks like a secret; move it to [arms.secrets] as "
                    f'{key} = "NAME_OF_OPERATOR_ENV_VAR" so its value never enters the matrix'
                )
        return env

    @model_validator(mode="after")
    def _lane_needs(self) -> Arm:
        if self.lane is LaneKind.DOCKER and self.image is None:
            raise FieldError(("image",), "a docker lane needs image = 'repo@sha256:<64 hex>'")
        if self.lane is LaneKind.PROCESS and not self.command:
            raise FieldError(("command",), "a process lane needs command = [...]")
        if self.lane is LaneKind.SIMULATOR and self.simulator is None:
            raise FieldError(
                ("simulator",), "a simulator lane needs a [arms.simulator] table with a profile"
            )
        if self.simulator is not None and self.engine is not None:
            raise FieldError(
                ("engine",), "an arm with an [arms.simulator] table runs the simulator; drop engine"
            )
        return self

    @model_validator(mode="after")
    def _no_secret_flags(self) -> Arm:
        """A flag that takes a secret would put it in the frozen matrix, the lane record
        and the bundle: it must come from the operator's environment instead."""
        for field, args in (("command", self.command or []), ("engine_args", self.engine_args)):
            found = secret_in(args)
            if found is not None:
                raise FieldError(
                    (field,),
                    f"{field} of arm {self.name!r} passes a secret on the command line "
                    f"({found}); it would be recorded in the bundle. Put its value in "
                    "[arms.secrets] as the lane env var the engine reads instead (vLLM: "
                    "VLLM_API_KEY, HF_TOKEN)",
                )
        return self

    @model_validator(mode="after")
    def _one_context(self) -> Arm:
        """The context is written once: the engine flag and the card's recipe agree."""
        flag = max_model_len_flag(self.engine_argv)  # ValueError names a bad value
        written = self.recipe.max_model_len
        if flag is not None and written is not None and flag != written:
            raise ValueError(
                f"arm {self.name!r} gives the context twice and they disagree: "
                f"{MAX_MODEL_LEN_FLAG} {flag} in its engine flags but recipe.max_model_len = "
                f"{written}; drop recipe.max_model_len (it is derived from the flag) or make "
                "the two equal"
            )
        return self

    @model_validator(mode="after")
    def _binds_its_port(self) -> Arm:
        if not self.runs_vllm:
            return self
        conflicts = binding_conflicts([*(self.command or []), *self.engine_args], self.binding)
        if conflicts:
            raise FieldError(
                (
                    "engine_args"
                    if binding_conflicts(self.engine_args, self.binding)
                    else "command",
                ),
                f"arm {self.name!r} runs vLLM with {'; '.join(conflicts)}; faceoff makes the "
                "engine listen on the arm's host and port under served_model, so remove these "
                "flags from command/engine_args or set host, port and served_model to match",
            )
        return self


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True
