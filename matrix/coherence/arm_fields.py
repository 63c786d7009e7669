"""An arm's fields that must say the same thing, checked together: what the engine is told
(its flags, its environment) against what faceoff samples and the card shows (``gpu_ids``,
``expected_quantization``, ``[arms.recipe]``). Each contradiction would cost the night or
corrupt its evidence without any error at run time, so it is refused here, both fields
named. Pure functions over an arm; ``Matrix`` calls ``check_arm_fields`` as it validates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from matrix.arm import Arm, LaneKind
from matrix.coherence.engine_flags import VLLM_VERSION, unknown_flags, vllm_flags
from matrix.engines import flag_value, human_int, runs_vllm
from matrix.fields import FieldError

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
QUANTIZATION_FLAGS = ("--quantization", "-q")
SPECULATIVE_FLAGS = ("--speculative-config", "-sc")
# [arms.recipe] fields and the vLLM flags that set the same thing.
RECIPE_FLAGS = (
    ("tensor_parallel", ("--tensor-parallel-size", "-tp")),
    ("decode_context_parallel", ("--decode-context-parallel-size", "-dcp")),
    ("max_num_batched_tokens", ("--max-num-batched-tokens",)),
    ("max_num_seqs", ("--max-num-seqs",)),
    ("kv_cache_dtype", ("--kv-cache-dtype",)),
)


def check_arm_fields(arm: Arm, where: tuple[str | int, ...]) -> None:
    """FieldError for the first contradiction, naming the field to fix below ``where``
    (the arm's place in the matrix)."""
    try:
        _check(arm)
    except FieldError as exc:
        raise FieldError((*where, *exc.loc), str(exc)) from None


def _check(arm: Arm) -> None:
    _distinct_gpus(arm)
    _visible_devices(arm)
    if not arm.runs_vllm:
        return
    argv = arm.engine_argv
    _quantization(arm, argv)
    _recipe(arm, argv)
    _speculative_config(arm, argv)
    _flag_typos(arm)


def given(argv: Sequence[str], flags: Sequence[str]) -> tuple[str, str] | None:
    """(spelling, value) of the first of ``flags`` that ``argv`` gives."""
    for flag in flags:
        value = flag_value(argv, flag)
        if value is not None:
            return flag, value
    return None


def _distinct_gpus(arm: Arm) -> None:
    twice = sorted({g for g in arm.gpu_ids if arm.gpu_ids.count(g) > 1})
    if twice:
        raise FieldError(
            ("gpu_ids",),
            f"gpu_ids = {arm.gpu_ids} names GPU {', '.join(map(str, twice))} more than once; "
            "the lane would get fewer GPUs than its engine's parallel sizes count on and the "
            "per-GPU samples would count one device twice; list each GPU once",
        )


def _visible_devices(arm: Arm) -> None:
    """faceoff gives a lane its ``gpu_ids`` (a process its ``CUDA_VISIBLE_DEVICES``, a container
    the devices, numbered 0… inside); a knob naming others puts the engine on GPUs that
    are not sampled."""
    value = arm.env.get(VISIBLE_DEVICES)
    if value is None or arm.simulator is not None:
        return
    ids = [w.strip() for w in value.split(",") if w.strip()]
    if not all(w.isdigit() for w in ids):
        return  # GPU UUIDs: nothing to compare here
    inside = arm.lane is LaneKind.DOCKER
    wanted = list(range(len(arm.gpu_ids))) if inside else arm.gpu_ids
    if sorted(map(int, ids)) != sorted(wanted):
        where = "inside its container the lane's GPUs are numbered " if inside else "gpu_ids are "
        raise FieldError(
            ("env", VISIBLE_DEVICES),
            f"env {VISIBLE_DEVICES} = {value!r} contradicts gpu_ids = {arm.gpu_ids} "
            f"({where}{','.join(map(str, wanted)) or 'none'}): the engine would run on GPUs "
            f"the collectors do not sample; drop {VISIBLE_DEVICES} from env (faceoff sets it "
            "from gpu_ids) and list the engine's GPUs in gpu_ids",
        )


def _quantization(arm: Arm, argv: Sequence[str]) -> None:
    flag = given(argv, QUANTIZATION_FLAGS)
    expected = arm.expected_quantization
    if flag is None or expected is None:
        return
    said, wanted = _quant_name(flag[1]), _quant_name(expected)
    if not (said.startswith(wanted) or wanted.startswith(said)):  # awq may boot as awq_marlin
        raise FieldError(
            ("expected_quantization",),
            f"expected_quantization = {expected!r} contradicts {flag[0]} {flag[1]} in the "
            "engine flags: the identity check would block every cell of the arm "
            "(identity_mismatch); make the two name the same quantization",
        )


def _quant_name(text: str) -> str:
    return text.strip().lower().replace("-", "_")


def _recipe(arm: Arm, argv: Sequence[str]) -> None:
    """The card's recipe table shows ``[arms.recipe]``; the engine runs its flags."""
    for field, flags in RECIPE_FLAGS:
        written = getattr(arm.recipe, field)
        flag = given(argv, flags)
        if written is None or flag is None or _same(written, flag[1], flag[0]):
            continue
        raise FieldError(
            ("recipe", field),
            f"recipe.{field} = {written!r} contradicts {flag[0]} {flag[1]} in the engine "
            "flags; the card would show a recipe the engine does not run: drop "
            f"recipe.{field} or make the two equal",
        )
    speculative = given(argv, SPECULATIVE_FLAGS)
    if speculative is not None and (arm.recipe.speculation or "").strip().lower() == "none":
        raise FieldError(
            ("recipe", "speculation"),
            f"recipe.speculation = 'none' contradicts {speculative[0]} in the engine flags; "
            "describe the speculative decoding it runs, or drop the flag",
        )


def _same(written: object, value: str, flag: str) -> bool:
    if isinstance(written, int):
        try:
            return human_int(value.strip(), flag) == written
        except ValueError:
            return True  # vLLM refuses the value itself; nothing to compare
    # a descriptive recipe ('FP8 DSMLA') names the flag's value ('fp8') among its words
    said, flag_says = _alnum(str(written)), _alnum(value)
    return flag_says in said or said in flag_says


def _alnum(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def _speculative_config(arm: Arm, argv: Sequence[str]) -> None:
    flag = given(argv, SPECULATIVE_FLAGS)
    if flag is None:
        return
    try:
        config = json.loads(flag[1])
    except json.JSONDecodeError as exc:
        config, problem = None, f"is not JSON ({exc.msg} at character {exc.pos})"
    else:
        problem = "is JSON but not an object"
    if not isinstance(config, dict):
        raise FieldError(
            (_where(arm, flag[0]),),
            f"{flag[0]} {flag[1]!r} {problem}; vLLM would exit at start. Write it as one JSON "
            'object, e.g. \'{"method": "ngram", "num_speculative_tokens": 4}\' (TOML: single '
            "quotes keep the double ones)",
        )


def _flag_typos(arm: Arm) -> None:
    """A flag vLLM does not know, spelled close to one it does, is a typo (a flag far from
    any is left to the warnings: another vLLM version may know it)."""
    command = arm.command or []
    checked = [*(command if runs_vllm(command) or arm.lane is LaneKind.DOCKER else []),
               *arm.engine_args]  # fmt: skip
    for unknown in unknown_flags(checked, vllm_flags()):
        if unknown.near is not None:
            raise FieldError(
                (_where(arm, unknown.flag),),
                f"{unknown.flag} is no flag of vLLM {VLLM_VERSION} (did you mean "
                f"{unknown.near}?); vLLM would exit at start, and a misspelt context flag "
                "switches off every check of cells against the context; correct the flag",
            )


def _where(arm: Arm, flag: str) -> str:
    """The field that holds ``flag``: engine_args when it is there, else command."""
    return "engine_args" if any(w.split("=", 1)[0] == flag for w in arm.engine_args) else "command"
