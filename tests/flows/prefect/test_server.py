"""The Prefect settings a run starts with: defaults that keep what the operator set."""

from __future__ import annotations

from pathlib import Path

from flows.prefect.server import apply_prefect_defaults, prefect_defaults


def test_prefect_defaults_keep_what_the_operator_set(tmp_path: Path) -> None:
    mine = {"PREFECT_HOME": "/srv/prefect", "PREFECT_API_URL": "http://prefect:4200/api"}
    assert prefect_defaults(mine, tmp_path) == {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600",  # a loaded host is slow
    }
    slow = {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300"}
    assert "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" not in prefect_defaults(
        slow, tmp_path
    )
    quiet = prefect_defaults({}, tmp_path, live_view=True)
    assert quiet["PREFECT_HOME"] == str((tmp_path / ".prefect").resolve())
    assert quiet["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] == "WARNING"
    environ: dict[str, str] = {}
    apply_prefect_defaults(environ, tmp_path / "runs")
    assert Path(environ["PREFECT_HOME"]).is_dir()
