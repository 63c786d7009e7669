"""Profiles: every bundled one loads; bad ones say where and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.profile import ProfileError, bundled_profiles, load_profile, with_overrides


@pytest.mark.parametrize("name", bundled_profiles())
def test_bundled_profiles_load(name: str) -> None:
    profile = load_profile(name)
    assert profile.engine.num_gpu_blocks * profile.engine.block_size >= profile.model.max_model_len


def test_published_pool_sizes() -> None:
    assert load_profile("exl3-r11").engine.kv_cache_tokens == 998_210
    assert load_profile("nvfp4-r2").engine.kv_cache_tokens == 1_330_579
    assert load_profile("nvfp4-r2").model.quantization == "modelopt_fp4"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "custom.toml"
    path.write_text(text)
    return str(path)


BASE = """
[model]
served_model_name = "m"
model_path = "/m"
quantization = "None"
max_model_len = 1024
[engine]
block_size = 16
kv_cache_tokens = 4096
max_num_seqs = 2
max_num_batched_tokens = 256
[timing]
prefill_rate = [[0, 1000]]
decode_step_ms = [[1, 10]]
"""


def test_a_minimal_profile_takes_defaults(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, BASE))
    assert profile.name == "custom" and profile.faults.error_rate == 0.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("max_num_seqs = 2", "max_num_sequences = 2"),
            r"\[engine\]: unknown key\(s\) \['max_num_sequences'\]",
        ),
        (
            ("max_num_seqs = 2", "max_num_seqs = 'two'"),
            r"\[engine\] max_num_seqs: expected an integer",
        ),
        (("prefill_rate = [[0, 1000]]", "prefill_rate = [[10, 1], [5, 2]]"), "increasing x"),
        (("kv_cache_tokens = 4096", "kv_cache_tokens = 512"), "cannot hold one max_model_len"),
        (("max_num_seqs = 2", "max_num_seqs = 0"), r"max_num_seqs: must be ≥ 1"),
        (("[timing]", "[timings]"), r"unknown table\(s\) \['timings'\]"),
    ],
)
def test_errors_name_the_file_table_and_key(tmp_path: Path, change, message) -> None:
    path = write(tmp_path, BASE.replace(*change))
    with pytest.raises(ProfileError, match=message) as caught:
        load_profile(path)
    assert path in str(caught.value)


def test_unknown_profile_lists_the_bundled_ones() -> None:
    with pytest.raises(ProfileError, match="tiny"):
        load_profile("no-such-profile")


def test_overrides_are_validated_like_the_file() -> None:
    tiny = load_profile("tiny")
    changed = with_overrides(
        tiny, ["engine.max_num_seqs=3", "faults.missing_families=['a']"], where="cli"
    )
    assert changed.engine.max_num_seqs == 3 and changed.faults.missing_families == ("a",)
    with pytest.raises(ProfileError, match=r"not section\.key"):
        with_overrides(tiny, ["max_num_seqs=3"], where="cli")
    with pytest.raises(ProfileError, match=r"error_rate: must be within 0\.\.1"):
        with_overrides(tiny, ["faults.error_rate=2"], where="cli")
