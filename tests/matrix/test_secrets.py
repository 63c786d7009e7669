"""Secrets anywhere in an arm's recipe are refused with the [arms.secrets] fix; knobs are not."""

from __future__ import annotations

import pytest

from matrix.secrets import secret_in, secret_name


@pytest.mark.parametrize(
    "name",
    ["HF_TOKEN", "OPENAI_KEY", "AUTHORIZATION", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY",
     "DB_PASSWORD", "api-key", "key", "token", "hf-token", "private-key"],
)  # fmt: skip
def test_names_of_secrets_are_secrets(name: str) -> None:
    assert secret_name(name)


KNOBS = (
    *("MAX_NUM_BATCHED_TOKENS", "LONG_PREFILL_TOKEN_THRESHOLD", "VLLM_USE_V1"),
    *("VLLM_PREFIX_CACHE_RETENTION_INTERVAL", "max-num-batched-tokens", "tokenizer"),
    *("hf-token-file", "ssl-keyfile", "api-key-path", "keyboard"),
)


@pytest.mark.parametrize("name", KNOBS)
def test_knobs_of_the_field_reports_are_not_secrets(name: str) -> None:
    assert not secret_name(name)


@pytest.mark.parametrize(
    ("args", "found"),
    [
        (["sh", "-c", "vllm serve /m --api-key sk-LEAK-123"], "--api-key"),
        (["vllm", "serve", "/m", "--key=abc"], "--key"),
        (["vllm", "serve", "/m", "--token", "x"], "--token"),
        (["curl", "-H", "Authorization: Bearer abc.def"], "a value shaped like"),
        (["sh", "-c", "HF=hf_abcdefghijklmnop vllm serve /m"], "a value shaped like"),
        (["serve", "sk-LEAK-123"], "a value shaped like"),
    ],
)
def test_a_secret_inside_any_command_word_is_found_and_not_repeated(
    args: list[str], found: str
) -> None:
    said = secret_in(args)
    assert said is not None and said.startswith(found)
    assert "LEAK" not in said and "abc" not in said


def test_an_ordinary_command_holds_no_secret() -> None:
    args = ["sh", "-c", "vllm serve /models/sk-tiny --max-num-batched-tokens 3584"]
    assert secret_in(args) is None
    assert secret_in(["--tokenizer", "/m", "--hf-token-file", "/run/secrets/hf"]) is None
