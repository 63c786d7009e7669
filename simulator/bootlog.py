"""The boot log a vLLM 0.32 server prints, for identity checks to read. Pure functions.

The lines a lane's identity check relies on have vLLM's wording: the engine config
line with ``model='…'`` and ``quantization=…``, ``GPU KV cache size: N tokens`` and
``Maximum concurrency for M tokens per request: X.XXx``. The API server line names
the bound address (``--port 0`` picks a free port; this line says which).
"""

from __future__ import annotations

from datetime import datetime

from simulator.profile import Profile


def stamp(now: datetime, pid: int, process: str, source: str, message: str) -> str:
    return f"({process} pid={pid}) INFO {now:%m-%d %H:%M:%S} [{source}] {message}"


def engine_config(profile: Profile, model_name: str, model_path: str) -> str:
    model, engine, spec = profile.model, profile.engine, profile.speculative
    speculative = (
        f"SpeculativeConfig(method='{spec.method}', num_spec_tokens={spec.num_speculative_tokens})"
        if spec.num_speculative_tokens
        else "None"
    )
    return (
        f"Initializing a V1 LLM engine (v{model.vllm_version}) with config: model='{model_path}', "
        f"speculative_config={speculative}, tokenizer='{model_path}', skip_tokenizer_init=False, "
        f"tokenizer_mode=auto, revision=None, trust_remote_code=False, dtype=torch.{model.dtype}, "
        f"max_seq_len={model.max_model_len}, download_dir=None, load_format=auto, "
        f"tensor_parallel_size={model.tensor_parallel_size}, pipeline_parallel_size=1, "
        f"data_parallel_size=1, disable_custom_all_reduce=False, "
        f"quantization={model.quantization}, enforce_eager=False, "
        f"kv_cache_dtype={model.kv_cache_dtype}, device_config=cuda, seed=0, "
        f"served_model_name={model_name}, enable_prefix_caching={engine.enable_prefix_caching}, "
        f"enable_chunked_prefill=True, max_num_batched_tokens={engine.max_num_batched_tokens}, "
        f"max_num_seqs={engine.max_num_seqs}"
    )


def starting_lines(
    profile: Profile, *, model_name: str, model_path: str, pid: int, now: datetime
) -> list[str]:
    version = profile.model.vllm_version
    return [
        stamp(now, pid, "APIServer", "api_server.py:1885", f"vLLM API server version {version}"),
        stamp(
            now,
            pid,
            "APIServer",
            "utils.py:326",
            f"non-default args: {{'model': "
            f"'{model_path}', 'served_model_name': ['{model_name}'], 'max_model_len': "
            f"{profile.model.max_model_len}}}",
        ),
        stamp(
            now, pid, "EngineCore_DP0", "core.py:93", engine_config(profile, model_name, model_path)
        ),
    ]


def listening_line(host: str, port: int, pid: int, now: datetime) -> str:
    where = f"http://{host}:{port}"
    return stamp(
        now, pid, "APIServer", "api_server.py:1929", f"Starting vLLM API server 0 on {where}"
    )


def ready_lines(profile: Profile, *, pid: int, now: datetime, load_s: float) -> list[str]:
    model, engine = profile.model, profile.engine
    concurrency = engine.kv_cache_tokens / model.max_model_len
    core = "EngineCore_DP0"
    return [
        stamp(
            now,
            pid,
            core,
            "gpu_model_runner.py:2602",
            f"Model loading took {model.model_load_gib:.2f} GiB and {load_s:.6f} seconds",
        ),
        stamp(
            now,
            pid,
            core,
            "gpu_worker.py:298",
            f"Available KV cache memory: {model.kv_cache_gib:.2f} GiB",
        ),
        stamp(
            now,
            pid,
            core,
            "kv_cache_utils.py:1087",
            f"GPU KV cache size: {engine.kv_cache_tokens:,} tokens",
        ),
        stamp(
            now,
            pid,
            core,
            "kv_cache_utils.py:1091",
            f"Maximum concurrency for {model.max_model_len:,} tokens per request: "
            f"{concurrency:.2f}x",
        ),
        stamp(
            now, pid, "APIServer", "launcher.py:46", "Route: /v1/chat/completions, Methods: POST"
        ),
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
    ]
