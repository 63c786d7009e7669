"""What a lane's boot log says about its memory: KV allocation, KV pool, model load. Pure.

vLLM prints these at startup (``Model loading took 80.58 GiB …``, ``Available KV
cache memory: 7.75 GiB``, ``GPU KV cache size: 998,210 tokens``). They are the
engine's own startup report, per GPU worker and rounded as printed; the card shows
them as such, beside the runtime-reported pool from ``cache_config_info``. The KV
size line names the device the pool lives on (``CPU KV cache size: 524,288 tokens``
on the CPU build, ``GPU + host`` with a host tier); the CPU build prints no GiB lines.
"""

from __future__ import annotations

import re

from faceoff.formats.bundle.lane_facts import BootFacts

MODEL_LOAD = re.compile(r"Model loading took (?P<gib>[0-9.]+) GiB")
KV_MEMORY = re.compile(r"Available KV cache memory: (?P<gib>[0-9.]+) GiB")
KV_TOKENS = re.compile(r"\b[A-Z]+(?: \+ host)? KV cache size: (?P<tokens>[0-9,]+) tokens")


def boot_facts(boot_log: str) -> BootFacts:
    """The last value of each line (a restarted engine prints them again)."""
    load = MODEL_LOAD.findall(boot_log)
    kv = KV_MEMORY.findall(boot_log)
    tokens = KV_TOKENS.findall(boot_log)
    return BootFacts(
        model_load_gib=float(load[-1]) if load else None,
        kv_cache_gib=float(kv[-1]) if kv else None,
        kv_cache_tokens=int(tokens[-1].replace(",", "")) if tokens else None,
    )
