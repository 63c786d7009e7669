"""Why an arm's warmups failed, in the sentence its verdict and ticket carry."""

from __future__ import annotations

from typing import Any

from flows.campaign.arm import CUT, warmup_failure
from flows.campaign.client import ClientExit
from workload.outcome import RequestOutcome, Status

WORDS = " ".join(f"token{n} is longer than the model's maximum input" for n in range(40))


def errored(text: str) -> RequestOutcome:
    """Only what warmup_failure reads (unvalidated: the rest of the journal line is unused)."""
    fields: dict[str, Any] = {"status": Status.HTTP_ERROR, "error": text}
    return RequestOutcome.model_construct(**fields)


def test_a_long_first_error_is_cut_between_words_and_says_where_the_rest_is() -> None:
    said = warmup_failure([errored(WORDS)], 1, ClientExit(0, None, None))
    assert said is not None and said.endswith(CUT)
    kept = said.removeprefix("1 of 1 warmup(s) errored; first: http_error: ").removesuffix(CUT)
    assert WORDS.startswith(kept) and WORDS[len(kept)] == " "  # whole words only
    assert len(kept) > 200


def test_a_short_error_is_quoted_whole_on_one_line() -> None:
    said = warmup_failure([errored("input too\nlong")], 1, ClientExit(0, None, None))
    assert said == "1 of 1 warmup(s) errored; first: http_error: input too long"
