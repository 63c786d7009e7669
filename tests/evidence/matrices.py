"""The glm53-shaped simulated campaign the evidence tests run (small and fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matrix.model import Matrix
from tests.conftest import free_port
from tests.evidence.campaign import sim_arm

PLANTED_TOKEN = "hf_PLANTED0123456789abcdefSECRET"
TOKEN_ENV = "FACEOFF_TEST_HF_TOKEN"

EXL3_RECIPE = {
    "checkpoint": "brandonmusic/GLM-5.3-Flash-tr3-4bpw (simulated)",
    "revision": "a5fee929cf4888b1824323e33e8a19b60129e025",
    "weight_format": "EXL3 4 bpw",
    "tensor_parallel": 2,
    "decode_context_parallel": 1,
    "kv_cache_dtype": "FP8 DSMLA",
    "speculation": "none",
    "max_num_batched_tokens": 2048,
    "max_model_len": 327680,
    "max_num_seqs": 4,
    "memory": "fraction 0.97; 52 GiB container limit",
}
NVFP4_RECIPE = {
    "checkpoint": "nvidia/GLM-5.3-Flash-FP4-Local (simulated)",
    "revision": "76348ddb2be2e35e39ecfc00e75dc07703f4f3d5",
    "weight_format": "NVIDIA NVFP4/MXFP8 compressed scales",
    "tensor_parallel": 2,
    "decode_context_parallel": 2,
    "kv_cache_dtype": "FP8",
    "speculation": "MTP3",
    "max_num_batched_tokens": 4096,
    "max_model_len": 327680,
    "max_num_seqs": 4,
    "memory": "fixed 7,650,410,496 KV bytes per GPU; fraction 0.985; 52 GiB container limit",
    "notes": "VLLM_GLM53_EMBED_HOST=1: not strictly GPU-only",
}


# Bounds no simulated request comes near, so the cell is within SLO on any host.
GENEROUS_SLO = {"ttft_ms": 600_000, "e2e_ms": 600_000, "attainment": 1.0}


def glm53_matrix(protected: list[Path], cells: list[dict[str, Any]] | None = None) -> Matrix:
    sampling = {"max_tokens": 512, "reasoning_effort": "max"}
    return Matrix.model_validate(
        {
            "campaign": {
                "name": "glm53-sim",
                "seed": 20261017,
                "description": "Simulated retained EXL3 r11 versus NVIDIA FP4 r2, complete "
                "recipes on the same (simulated) GPUs.",
            },
            "arms": [
                sim_arm("exl3-r11", "incumbent", "exl3-r11", free_port(),
                        expected_quantization="exl3", recipe=EXL3_RECIPE,
                        secrets={"HF_TOKEN": TOKEN_ENV}),
                sim_arm("nvfp4-r2", "candidate", "nvfp4-r2", free_port(),
                        expected_quantization="modelopt_fp4", recipe=NVFP4_RECIPE,
                        env={"VLLM_GLM53_EMBED_HOST": "1"}, secrets={"HF_TOKEN": TOKEN_ENV}),
            ],
            "cells": cells or [
                {"id": "natural-8192-c1", "kind": "natural", "input_tokens": 8192,
                 "concurrency": 1, "requests": 4, "sampling": sampling,
                 "slo": GENEROUS_SLO},
                {"id": "natural-31600-c2", "kind": "natural", "input_tokens": 31600,
                 "concurrency": 2, "requests": 4, "sampling": sampling},
                {"id": "controlled-8192-c1", "kind": "controlled", "input_tokens": 8192,
                 "concurrency": 1, "requests": 2, "output_words": 64, "sampling": sampling},
            ],
            "thresholds": {"engine_period_s": 0.1, "memory_period_s": 0.25,
                           "min_coverage": 0.2, "max_consecutive_misses": 40,
                           # the shared test host stalls; host_stall has its own tests
                           "max_stalled_requests": 1.0, "max_client_cpu_wait": 1.0},
            "families": {"not_applicable": {
                "gpu_memory": "simulator lanes run on hosts without GPUs"}},
            "protected_files": [str(p) for p in protected],
        }
    )  # fmt: skip
