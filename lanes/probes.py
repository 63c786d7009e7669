"""Smoke probes: a short completion must return text; a JSON completion must parse.

Both go to the lane directly, or through the operator's router with its bearer
token. Each probe is judged by a pure function over the reply; a probe set passes
only N of N. The JSON smoke judges the visible content only: a reasoning model's
reasoning (its own field, or a leading ``<think>`` block when the engine runs no
reasoning parser) is not part of the answer. An arm whose model cannot emit JSON
declares the JSON smoke off, with the reason the receipt quotes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from faceoff.formats.receipt import ProbeKind, ProbeResult, ProbeSummary
from lanes.http import Http, HttpReply
from matrix.arm import Probes

SMOKE_PROMPT = "Reply with one short sentence confirming that you are online."
JSON_PROMPT = 'Reply with exactly this JSON object and nothing else: {"status": "ok"}'
PROBE_TIMEOUT_S = 120.0
EXCERPT = 120
THINK_BLOCK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


def run_probes(
    http: Http,
    kind: ProbeKind,
    *,
    base_url: str,
    model: str,
    count: int,
    settings: Probes,
    via: Literal["lane", "router"] = "lane",
    headers: dict[str, str] | None = None,
) -> ProbeSummary:
    url = f"{base_url.rstrip('/')}/v1/chat/completions"
    payload = probe_payload(kind, model, settings)
    results = []
    for index in range(count):
        reply = http.post_json(url, payload, timeout=PROBE_TIMEOUT_S, headers=headers)
        results.append(judge_probe(kind, index, reply))
    passed = sum(r.ok for r in results)
    return ProbeSummary(
        kind=kind, via=via, url=url, model=model, passed=passed, total=count, results=results
    )


def probe_payload(kind: ProbeKind, model: str, settings: Probes) -> dict[str, Any]:
    is_json = kind == "json_smoke"
    payload: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": JSON_PROMPT if is_json else SMOKE_PROMPT}],
        "max_tokens": settings.json_smoke_max_tokens if is_json else settings.smoke_max_tokens,
        "temperature": 0,
        "stream": False,
    }
    if is_json:
        payload["response_format"] = {"type": "json_object"}
    if settings.chat_template_kwargs:
        payload["chat_template_kwargs"] = dict(settings.chat_template_kwargs)
    return payload


def judge_probe(kind: ProbeKind, index: int, reply: HttpReply) -> ProbeResult:
    """Pass or fail one probe from its reply alone."""
    if not reply.ok:
        return _result(index, reply, False, f"no completion: {reply.describe()}")
    try:
        message = reply.json()["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return _result(index, reply, False, "the reply is not an OpenAI chat completion")
    content = str(message.get("content") or "")
    if kind == "json_smoke":
        return _judge_json(index, reply, content)
    reasoning = str(message.get("reasoning_content") or message.get("reasoning") or "")
    if content.strip():
        return _result(index, reply, True, "non-empty visible text", content)
    if reasoning.strip():
        return _result(index, reply, True, "non-empty reasoning text, no visible text", reasoning)
    return _result(index, reply, False, "the completion returned no text")


def visible_answer(content: str) -> str:
    """The content without a leading ``<think>…</think>`` block: reasoning left in the
    content by an engine that runs no reasoning parser."""
    return THINK_BLOCK.sub("", content, count=1).strip()


def _judge_json(index: int, reply: HttpReply, content: str) -> ProbeResult:
    content = visible_answer(content)
    try:
        parsed = json.loads(content)
    except json.JSONDecodeError as exc:
        return _result(index, reply, False, f"the content is not JSON ({exc.msg})", content)
    if not isinstance(parsed, dict):
        return _result(index, reply, False, "the JSON is not an object", content)
    return _result(index, reply, True, "a JSON object that parses", content)


def _result(index: int, reply: HttpReply, ok: bool, detail: str, text: str = "") -> ProbeResult:
    return ProbeResult(
        index=index,
        ok=ok,
        status=reply.status,
        elapsed_s=round(reply.elapsed_s, 6),
        detail=detail,
        excerpt=text[:EXCERPT],
    )
