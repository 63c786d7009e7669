"""The HTTP routes: vLLM's OpenAI server surface, ``/metrics``, ``/_sim/faults``, ``/_sim/gpu``.

``Api`` holds what the handlers share (built once by ``server.build``); a
middleware turns ``ApiError`` into vLLM's error body, counts requests like
vLLM's HTTP instrumentation, and implements the hang fault for every route.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from simulator.engine import Engine
from simulator.faults import FaultState
from simulator.gpu import VirtualGpus
from simulator.groundtruth import GroundTruth
from simulator.logits import LogitModel
from simulator.metrics import Families
from simulator.output import OutputPlan, needle_limited, plan_output
from simulator.profile import Profile, ProfileError
from simulator.protocol import (
    ApiError,
    GenerationRequest,
    context_error,
    max_tokens_error,
    parse_chat,
    parse_completion,
    parse_tokenize,
    require_object,
)
from simulator.scheduler import Emission, Seq
from simulator.scoring import check_prompt_logprobs, greedy_plan, prompt_logprobs
from simulator.streams import Generation, stream, whole
from simulator.tokenizer import Tokenizer, TokenizerError
from simulator.wire import Envelope, dumps, models_body

# What a proxy in front of a dead engine answers: 200, and no Prometheus text in it.
GARBAGE = b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Api:
    profile: Profile
    model_name: str
    model_path: str
    tokenizer: Tokenizer
    engine: Engine
    families: Families
    faults: FaultState
    truth: GroundTruth
    on_fatal: Callable[[str, int], None]  # ("crash" | "oom", exit code); does not return
    logits: LogitModel
    clock: Callable[[], int] = time.perf_counter_ns
    wall: Callable[[], float] = time.time
    ready: bool = False
    started: int = 0
    fingerprint: str = "vllm-0.32.0"
    gpus: VirtualGpus | None = None

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/health", self.health),
            web.get("/version", self.version),
            web.get("/v1/models", self.models),
            web.get("/metrics", self.metrics),
            web.post("/tokenize", self.tokenize),
            web.post("/detokenize", self.detokenize),
            web.post("/v1/chat/completions", self.chat),
            web.post("/v1/completions", self.completions),
            web.get("/_sim/faults", self.get_faults),
            web.post("/_sim/faults", self.set_faults),
            web.get("/_sim/gpu", self.gpu),
        ]

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.faults.hung:
            await asyncio.Event().wait()  # the hang fault: nothing answers, ever
        try:
            response = await handler(request)
        except ApiError as exc:
            response = json_response(exc.body(), exc.status)
        except web.HTTPException as exc:  # unknown route or method, as FastAPI words it
            response = json_response({"detail": exc.reason}, exc.status)
        self._count(request, response.status)
        return response

    def _count(self, request: web.Request, status: int) -> None:
        resource = request.match_info.route.resource
        if resource is not None:
            handler = resource.canonical
            method = request.method
            self.families.http.labels(
                handler=handler, method=method, status=f"{status // 100}xx"
            ).inc()

    async def health(self, _request: web.Request) -> web.Response:
        return web.Response(status=self.faults.spec.health_status if self.ready else 503)

    async def version(self, _request: web.Request) -> web.Response:
        return json_response({"version": self.profile.model.vllm_version})

    async def models(self, _request: web.Request) -> web.Response:
        perm = f"modelperm-{uuid.uuid4().hex[:16]}"
        body = models_body(
            self.model_name, self.model_path, self.profile.model.max_model_len, self.started, perm
        )
        return json_response(body)

    async def metrics(self, _request: web.Request) -> web.Response:
        spec = self.faults.spec
        if spec.metrics_delay_s:
            await asyncio.sleep(spec.metrics_delay_s)
        if spec.metrics_status != 200:
            return web.Response(status=spec.metrics_status, text="metrics unavailable\n")
        if spec.metrics_garbage:
            return web.Response(body=GARBAGE, headers={"Content-Type": CONTENT_TYPE_LATEST})
        body = self.families.exposition(spec.missing_families)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def tokenize(self, request: web.Request) -> web.Response:
        self._require_ready()
        body = require_object(await read_json(request))
        self._check_model(body.get("model"))
        if self.faults.spec.tokenize_delay_s:
            await asyncio.sleep(self.faults.spec.tokenize_delay_s)
        tokens = parse_tokenize(body, self.tokenizer)
        strs = self.tokenizer.token_strs(tokens) if body.get("return_token_strs") else None
        return json_response(
            {
                "count": len(tokens),
                "max_model_len": self.profile.model.max_model_len,
                "tokens": tokens,
                "token_strs": strs,
            }
        )

    async def detokenize(self, request: web.Request) -> web.Response:
        self._require_ready()
        body = require_object(await read_json(request))
        self._check_model(body.get("model"))
        try:
            tokens = self.tokenizer.check_ids(body.get("tokens") or [])
        except TokenizerError as exc:
            raise ApiError(400, str(exc), param="tokens") from exc
        return json_response({"prompt": self.tokenizer.decode(tokens)})

    async def get_faults(self, _request: web.Request) -> web.Response:
        return json_response(self.faults.as_dict())

    async def set_faults(self, request: web.Request) -> web.Response:
        try:
            self.faults.update(await read_json(request))
        except ProfileError as exc:
            raise ApiError(400, str(exc)) from exc
        return json_response(self.faults.as_dict())

    async def gpu(self, _request: web.Request) -> web.Response:
        """The virtual GPUs' readings, for faceoff's virtual NVML (not a vLLM route)."""
        if self.gpus is None:
            raise ApiError(404, "This simulator models no GPU.")
        return json_response(self.gpus.snapshot())

    async def chat(self, request: web.Request) -> web.StreamResponse:
        self._require_ready()
        return await self._generate(request, parse_chat(await read_json(request), self.tokenizer))

    async def completions(self, request: web.Request) -> web.StreamResponse:
        self._require_ready()
        body = await read_json(request)
        return await self._generate(request, parse_completion(body, self.tokenizer))

    def _require_ready(self) -> None:
        if not self.ready:
            raise ApiError(503, "The server is starting up; retry when /health returns 200.")

    def _check_model(self, model: object) -> None:
        if model is not None and model != self.model_name:
            raise ApiError(404, f"The model `{model}` does not exist.", param="model")

    async def _generate(self, request: web.Request, req: GenerationRequest) -> web.StreamResponse:
        arrival = self.clock()
        self._check_model(req.model)
        if self._fatal_faults() == "hang":
            await asyncio.Event().wait()
        max_tokens = self._max_tokens(req)
        status = self.faults.error_status()
        if status:
            raise ApiError(status, "The engine failed to process the request (injected fault).")
        self._check_queue()
        nonce = uuid.uuid4().int % (1 << 63)  # this request's batch noise, if the profile has any
        scored = self._scored(req, nonce)
        gen, seq = self._admit(req, max_tokens, arrival, nonce)
        chat = req.endpoint == "chat"
        try:
            if req.stream:
                response = await stream(request, gen, self.truth, self.tokenizer, chat)
            else:
                response = await whole(gen, self.truth, self.tokenizer, chat, scored)
        except (ConnectionResetError, asyncio.CancelledError):
            self.engine.abort(seq)
            self._journal(gen, seq, status=499, finish_reason="abort")  # client went away
            raise
        self._journal(gen, seq, status=200, finish_reason=gen.plan.finish_reason)
        return response

    def _journal(self, gen: Generation, seq: Seq, *, status: int, finish_reason: str) -> None:
        self.truth.finish(
            gen.trace,
            status=status,
            prompt_tokens=gen.prompt_tokens,
            completion_tokens=seq.generated,
            finish_reason=finish_reason,
        )

    def _fatal_faults(self) -> str | None:
        fault = self.faults.arrival()
        if fault in ("crash", "oom"):
            self.on_fatal(fault, self.faults.spec.crash_exit_code)
        if fault == "hang":
            self.faults.hung = True
            self.engine.freeze()
        return fault

    def _max_tokens(self, req: GenerationRequest) -> int:
        prompt, limit = len(req.prompt_tokens), self.profile.model.max_model_len
        if self.faults.refuses(prompt):
            raise context_error(self.faults.spec.refuse_above_tokens, prompt)
        if prompt >= limit:
            raise context_error(limit, prompt)
        if req.max_tokens is None:
            return limit - prompt
        if prompt + req.max_tokens > limit:
            raise max_tokens_error(limit, prompt, req.max_tokens)
        return req.max_tokens

    def _scored(self, req: GenerationRequest, nonce: int) -> dict[str, object]:
        """A non-streamed completion's ``prompt_logprobs`` and ids, when the request asks."""
        if req.endpoint != "completion" or req.stream:
            return {}
        scored: dict[str, object] = {}
        if req.prompt_logprobs is not None:
            model = self.logits
            k = check_prompt_logprobs(
                req.prompt_logprobs, model.spec.max_logprobs, model.vocab_size
            )
            scored["prompt_logprobs"] = prompt_logprobs(
                self.logits, self.tokenizer, req.prompt_tokens, k, nonce
            )
        if req.return_token_ids:
            scored["prompt_token_ids"] = req.prompt_tokens
        return scored

    def _check_queue(self) -> None:
        limit = self.profile.engine.max_queued_requests
        if limit and len(self.engine.scheduler.waiting) >= limit:
            self.families.rejections.labels(
                model_name=self.model_name, reason="max_num_queued_reqs"
            ).inc()
            raise ApiError(
                429, f"The engine queue is full ({limit} waiting requests); retry later."
            )

    def _admit(
        self, req: GenerationRequest, max_tokens: int, arrival: int, nonce: int
    ) -> tuple[Generation, Seq]:
        plan = self._plan(req, max_tokens, nonce)
        envelope = self._envelope(req)
        queue: asyncio.Queue[Emission] = asyncio.Queue()
        seq = Seq(
            request_id=envelope.ident,
            prompt=req.prompt_tokens,
            planned=len(plan.tokens),
            max_tokens=max_tokens,
            acceptance=self.engine.acceptance(plan.reasoning_count, plan.text_kind),
            finish_reason=plan.finish_reason,
            arrival_ns=arrival,
            sink=queue.put_nowait,
        )
        trace = self.truth.start(envelope.ident, req.endpoint, req.stream, arrival)
        gen = Generation(envelope, plan, len(req.prompt_tokens), queue, trace)
        gen.reasoning_field = self.profile.output.reasoning_field
        gen.include_usage, gen.continuous_usage = req.include_usage, req.continuous_usage
        gen.return_token_ids = req.return_token_ids
        gen.prompt_ids = tuple(req.prompt_tokens) if req.return_token_ids else ()
        self.engine.submit(seq)
        return gen, seq

    def _plan(self, req: GenerationRequest, max_tokens: int, nonce: int) -> OutputPlan:
        if req.endpoint == "completion" and req.temperature == 0:
            return greedy_plan(self.logits, req.prompt_tokens, max_tokens, nonce)
        faults = self.faults.spec
        return plan_output(
            req,
            needle_limited(self.profile.output, faults.needle_miss_above_tokens),
            self.tokenizer,
            max_tokens=max_tokens,
            overrun=faults.contract_overrun,
        )

    def _envelope(self, req: GenerationRequest) -> Envelope:
        prefix = "chatcmpl" if req.endpoint == "chat" else "cmpl"
        ident = f"{prefix}-{uuid.uuid4().hex[:16]}"
        return Envelope(ident, int(self.wall()), self.model_name, self.fingerprint)


async def read_json(request: web.Request) -> object:
    try:
        return await request.json()
    except ValueError as exc:
        raise ApiError(400, f"The request body is not valid JSON: {exc}") from exc


def json_response(body: object, status: int = 200) -> web.Response:
    return web.Response(text=dumps(body), status=status, content_type="application/json")
