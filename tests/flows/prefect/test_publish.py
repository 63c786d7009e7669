"""What a run publishes to Prefect: artifact keys Prefect accepts."""

from __future__ import annotations

from flows.prefect.publish import artifact_key


def test_artifact_keys_are_what_prefect_accepts() -> None:
    assert artifact_key("GLM_5.3 exl3", "result-card") == "glm-5-3-exl3-result-card"
