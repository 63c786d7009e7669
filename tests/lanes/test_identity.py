"""Identity as a pure comparison, and the boot log's quantization line."""

from __future__ import annotations

from pathlib import Path

import pytest

from faceoff.formats.lane import ObservedIdentity, ServedModel
from lanes.bootlog import quantization_values
from lanes.identity import expected_identity, judge_identity
from tests.lanes.helpers import arm

DIGEST = "127.0.0.1:5000/faceoff/sim@sha256:" + "a" * 64
OTHER = "127.0.0.1:5000/faceoff/sim@sha256:" + "b" * 64
REFERENCE = Path("/work/shared/reference/vllm-0.32/README.md")


def docker_arm(**fields):  # type: ignore[no-untyped-def]
    return arm(
        lane="docker",
        image=DIGEST,
        command=None,
        expected_quantization="exl3",
        weights_manifest="/models/glm",
        expected_weights_sha256="c" * 64,
        **fields,
    )


def matching() -> ObservedIdentity:
    return ObservedIdentity(
        image=DIGEST,
        models=[ServedModel(id="llm.primary", root="/models/glm")],
        quantizations=["exl3"],
        weights_sha256="c" * 64,
    )


def test_matching_identity_passes() -> None:
    verdict = judge_identity("inc", expected_identity(docker_arm()), matching())
    assert verdict.ok and verdict.mismatches == [] and verdict.reason is None


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"image": OTHER}, "image", ["expected " + DIGEST, "the running container says " + OTHER]),
        (
            {"models": [ServedModel(id="other", root="/models/glm")]},
            "served_model",
            ["expected 'llm.primary'", "/v1/models says 'other'"],
        ),
        (
            {"models": [ServedModel(id="llm.primary", root="/models/nvfp4")]},
            "root",
            ["expected '/models/glm'", "'/models/nvfp4'"],
        ),
        (
            {"quantizations": ["modelopt_fp4"]},
            "quantization",
            ["expected 'exl3'", "the boot log says 'modelopt_fp4'"],
        ),
        ({"quantizations": []}, "quantization", ["no quantization= line"]),
        (
            {"weights_sha256": None, "weights_detail": "model directory /x does not exist"},
            "weights",
            ["no manifest (model directory /x does not exist)"],
        ),
    ],
)
def test_each_mismatch_names_the_field_and_both_values(
    change: dict, field: str, words: list[str]
) -> None:
    observed = matching().model_copy(update=change)
    verdict = judge_identity("inc", expected_identity(docker_arm()), observed)
    assert not verdict.ok
    assert [m.field for m in verdict.mismatches] == [field]
    assert verdict.reason is not None and verdict.reason.startswith("identity of arm 'inc'")
    for word in words:
        assert word in verdict.reason


def test_several_quantization_values_do_not_pass() -> None:
    observed = matching().model_copy(update={"quantizations": ["exl3", "fp8"]})
    verdict = judge_identity("inc", expected_identity(docker_arm()), observed)
    assert verdict.reason is not None and "'exl3', 'fp8'" in verdict.reason


def test_quantization_compares_without_case() -> None:
    observed = matching().model_copy(update={"quantizations": ["EXL3"]})
    assert judge_identity("inc", expected_identity(docker_arm()), observed).ok


def test_unpinned_fields_are_recorded_only() -> None:
    loose = arm(expected_quantization=None, weights_manifest=None)
    observed = ObservedIdentity(
        models=[ServedModel(id="llm.primary", root="/anything")], quantizations=["fp8"]
    )
    assert judge_identity("inc", expected_identity(loose), observed).ok


def test_a_baseline_pins_what_the_matrix_left_open() -> None:
    loose = arm(expected_quantization=None, weights_manifest=None)
    baseline = ObservedIdentity(
        models=[ServedModel(id="llm.primary", root="/models/exl3")],
        quantizations=["exl3"],
        weights_sha256="d" * 64,
    )
    expected = expected_identity(loose, baseline)
    assert (expected.root, expected.quantization, expected.weights_sha256) == (
        "/models/exl3",
        "exl3",
        "d" * 64,
    )
    swapped = baseline.model_copy(update={"quantizations": ["modelopt_fp4"]})
    verdict = judge_identity("inc", expected, swapped)
    assert [m.field for m in verdict.mismatches] == ["quantization"]


def test_quantization_is_read_from_vllm_boot_lines() -> None:
    vllm = (
        "INFO Initializing a V1 LLM engine (v0.32.0) with config: model='/models/glm', "
        "dtype=torch.bfloat16, max_seq_len=327680, quantization=exl3, kv_cache_dtype=fp8\n"
        "INFO [kv_cache_utils.py] GPU KV cache size: 998,210 tokens\n"
    )
    assert quantization_values(vllm) == ["exl3"]
    assert quantization_values("engine config quantization: modelopt_fp4\n") == ["modelopt_fp4"]
    assert quantization_values("quantization=None, enforce_eager=False") == ["None"]
    assert quantization_values("no such line\n") == []


@pytest.mark.skipif(not REFERENCE.exists(), reason="reference captures not on this machine")
def test_quantization_of_the_reference_capture() -> None:
    assert quantization_values(REFERENCE.read_text()) == ["None"]
