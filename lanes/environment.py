"""A lane's environment: knobs from the matrix, secrets from the operator, redaction.
The same concept at another layer: ``flows.campaign.preflight.environment``.

Secrets are named in the matrix (lane variable → operator variable) and resolved
from the operator's environment at start. Their values reach the lane and nothing
else: every record faceoff writes shows ``***`` in their place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from faceoff.errors import FaceoffError
from matrix.arm import Arm

REDACTED = "***"
# Values shorter than this are not scrubbed from free text: a secret "1" would
# otherwise mangle every number in an inspect dump. Env entries are always redacted.
MIN_SCRUB_LENGTH = 4
# What a host process lane inherits from the operator's environment, besides its knobs.
HOST_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER")


@dataclass(frozen=True)
class LaneEnv:
    """The lane's variables, and which of them hold secrets."""

    values: dict[str, str]
    secret_names: frozenset[str]

    def redacted(self) -> dict[str, str]:
        return {k: REDACTED if k in self.secret_names else v for k, v in self.values.items()}

    def scrub(self, value: Any) -> Any:
        """A copy of ``value`` (text, or JSON-like data) with every secret value replaced."""
        secrets = [
            self.values[n] for n in self.secret_names if len(self.values[n]) >= MIN_SCRUB_LENGTH
        ]
        return _scrub(value, sorted(secrets, key=len, reverse=True), self.secret_names)


def resolve_env(arm: Arm, environ: Mapping[str, str]) -> LaneEnv:
    """Knobs plus secrets read from the operator's environment; a missing one is an error."""
    values = dict(arm.env)
    for lane_var, operator_var in arm.secrets.items():
        if operator_var not in environ:
            raise FaceoffError(
                f"secret {lane_var} of arm {arm.name!r} comes from the operator's environment "
                f"variable {operator_var}, which is not set",
                where=f"arms[{arm.name}].secrets.{lane_var}",
                fix=f"export {operator_var} before starting faceoff",
            )
        values[lane_var] = environ[operator_var]
    return LaneEnv(values=values, secret_names=frozenset(arm.secrets))


def host_process_env(arm: Arm, lane_env: LaneEnv, environ: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed host variables, the lane's GPUs, then its knobs and secrets."""
    env = {k: environ[k] for k in HOST_ALLOWLIST if k in environ}
    env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in arm.gpu_ids)
    env.update(lane_env.values)
    return env


def _scrub(value: Any, secrets: list[str], names: frozenset[str]) -> Any:
    if isinstance(value, str):
        return _scrub_text(value, secrets, names)
    if isinstance(value, dict):
        return {k: _scrub(v, secrets, names) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, secrets, names) for v in value]
    return value


def _scrub_text(text: str, secrets: list[str], names: frozenset[str]) -> str:
    name, sep, _ = text.partition("=")
    if sep and name in names:  # an env entry such as Config.Env's "HF_TOKEN=…"
        return f"{name}={REDACTED}"
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text
