"""The operator's router: drain and readmit the lane, and smoke through it with its token.

Drain and readmit are an HTTP POST (sent with the router's bearer token) or an
operator command; whichever the arm names. The token comes from the environment
variable the arm names and appears in no record.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from typing import Any

from faceoff.errors import FaceoffError
from faceoff.formats.receipt import ProbeKind, ProbeSummary, RouterAction, RouterActionName
from faceoff.ports import Clock
from lanes.environment import REDACTED
from lanes.http import Http
from lanes.probes import run_probes
from matrix.arm import Arm, Router

COMMAND_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 30.0
OUTPUT_EXCERPT = 300


class RouterHook:
    """One arm's router, with its token resolved from the operator's environment."""

    def __init__(
        self,
        arm: Arm,
        environ: Mapping[str, str],
        http: Http,
        now: Clock,
        run: Callable[..., Any] = subprocess.run,
    ) -> None:
        if arm.router is None:
            raise FaceoffError(f"arm {arm.name!r} has no [arms.router]")
        self.arm = arm
        self.router: Router = arm.router
        self.token = _token(arm, self.router, environ)
        self.environ = dict(environ)
        self.http = http
        self.now = now
        self._run = run

    @property
    def model(self) -> str:
        return self.router.model or self.arm.served_model

    def drain(self) -> RouterAction:
        return self._act("drain", self.router.drain_url, self.router.drain_command)

    def readmit(self) -> RouterAction:
        return self._act("readmit", self.router.readmit_url, self.router.readmit_command)

    def smoke(self, kind: ProbeKind) -> ProbeSummary:
        """N authenticated probes through the router's URL."""
        return run_probes(
            self.http,
            kind,
            base_url=self.router.url,
            model=self.model,
            count=self.router.smoke_requests,
            settings=self.arm.probes,
            via="router",
            headers=self._auth(),
        )

    def _act(
        self, action: RouterActionName, url: str | None, command: list[str] | None
    ) -> RouterAction:
        if url is not None:
            reply = self.http.post_json(url, {}, timeout=HTTP_TIMEOUT_S, headers=self._auth())
            return self._action(action, "http", reply.ok, f"POST {url}: {reply.describe()}")
        if command is not None:
            return self._command(action, command)
        return self._action(action, "none", True, f"the router names no {action} hook")

    def _command(self, action: RouterActionName, command: list[str]) -> RouterAction:
        try:
            done = self._run(
                command,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_S,
                env=self.environ,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return self._action(action, "command", False, f"{command[0]}: {exc}")
        output = (done.stdout + done.stderr).strip()[-OUTPUT_EXCERPT:]
        detail = f"{' '.join(command)} exited {done.returncode}" + (f": {output}" if output else "")
        return self._action(action, "command", done.returncode == 0, detail)

    def _action(self, action: RouterActionName, via: Any, ok: bool, detail: str) -> RouterAction:
        return RouterAction(
            action=action,
            via=via,
            ok=ok,
            at=self.now(),
            detail=detail.replace(self.token, REDACTED),
        )

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def _token(arm: Arm, router: Router, environ: Mapping[str, str]) -> str:
    token = environ.get(router.token_env, "")
    if not token:
        raise FaceoffError(
            f"the router token of arm {arm.name!r} comes from {router.token_env}, which is not set",
            where=f"arms[{arm.name}].router.token_env",
            fix=f"export {router.token_env} with the router's bearer token",
        )
    return token
