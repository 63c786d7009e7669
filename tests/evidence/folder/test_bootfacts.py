"""What a boot log says about memory, on a GPU engine and on vLLM's CPU build."""

from __future__ import annotations

from evidence.folder.bootfacts import boot_facts

# As vLLM 0.32's CPU build prints it (/work/shared/reference/vllm-0.32/README.md).
CPU_BOOT = (
    "(EngineCore_DP0 pid=2211) INFO 12-01 00:41:07 [kv_cache_utils.py:1333] CPU KV cache size: "
    "524,288 tokens, Maximum concurrency for 8,192 tokens per request: 64.00x\n"
)
GPU_BOOT = (
    "(Worker_TP0 pid=88) INFO [gpu_model_runner.py] Model loading took 80.58 GiB memory and "
    "41.2 seconds\n"
    "(Worker_TP0 pid=88) INFO [gpu_worker.py] Available KV cache memory: 7.75 GiB\n"
    "(EngineCore pid=77) INFO [kv_cache_utils.py] GPU KV cache size: 998,210 tokens, "
    "Maximum concurrency for 327,680 tokens per request: 3.05x\n"
)


def test_the_cpu_builds_kv_pool_is_read() -> None:
    facts = boot_facts(CPU_BOOT)
    assert facts.kv_cache_tokens == 524_288
    assert facts.kv_cache_gib is None and facts.model_load_gib is None  # not printed on CPU


def test_the_gpu_lines_are_read_and_a_restart_reprints_them() -> None:
    facts = boot_facts(GPU_BOOT + GPU_BOOT.replace("998,210", "1,002,112"))
    assert (facts.model_load_gib, facts.kv_cache_gib, facts.kv_cache_tokens) == (
        80.58, 7.75, 1_002_112,
    )  # fmt: skip
    assert boot_facts("GPU + host KV cache size: 2,000,000 tokens").kv_cache_tokens == 2_000_000
