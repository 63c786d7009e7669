"""A lane's recipe: secrets and their redaction, a host process's environment, the simulator's
flags and a container's arguments, all resolved from the arm."""

from __future__ import annotations

from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from lanes.commands import container_command, host_command, simulator_args
from lanes.docker import container_kwargs
from lanes.environment import REDACTED, host_process_env, resolve_env
from lanes.images import parse_pinned
from tests.lanes.helpers import arm, context
from tests.lanes.test_images import PINNED


def test_secrets_come_from_the_operator_and_never_reach_records() -> None:
    the_arm = arm(env={"VLLM_LOGGING": "1"}, secrets={"HF_TOKEN": "OP_HF"})
    env = resolve_env(the_arm, {"OP_HF": "hf_s3cret_value"})
    assert env.values == {"VLLM_LOGGING": "1", "HF_TOKEN": "hf_s3cret_value"}
    assert env.redacted() == {"VLLM_LOGGING": "1", "HF_TOKEN": REDACTED}
    inspect = {"Config": {"Env": ["HF_TOKEN=hf_s3cret_value", "A=1"], "Cmd": ["--x"]}, "N": 3}
    scrubbed = env.scrub(inspect)
    assert scrubbed["Config"]["Env"] == ["HF_TOKEN=***", "A=1"] and scrubbed["N"] == 3
    assert env.scrub("token is hf_s3cret_value.") == "token is ***."


def test_a_missing_secret_names_both_variables() -> None:
    with pytest.raises(FaceoffError) as err:
        resolve_env(arm(secrets={"HF_TOKEN": "OP_HF"}), {})
    assert "HF_TOKEN" in err.value.message and "Export OP_HF" in err.value.message


def test_host_processes_get_an_allow_list_and_their_gpus() -> None:
    the_arm = arm(gpu_ids=[0, 1], env={"KNOB": "x"})
    env = host_process_env(the_arm, resolve_env(the_arm, {}), {"PATH": "/bin", "AWS_KEY": "k"})
    assert env == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0,1", "KNOB": "x"}


def test_simulator_arms_become_simulator_flags() -> None:
    sim = arm(
        lane="simulator",
        command=None,
        port=18101,
        weights_manifest="/models/x",
        simulator={
            "profile": "exl3-r11",
            "time_scale": 20,
            "faults": {"oom_after_requests": 3, "contract_overrun": True},
        },
    )
    assert simulator_args(sim) == [
        "--profile", "exl3-r11", "--host", "127.0.0.1", "--port", "18101",
        "--time-scale", "20", "--served-model-name", "llm.primary",
        "--model-path", "/models/x", "--fault", "contract_overrun=true",
        "--fault", "oom_after_requests=3",
    ]  # fmt: skip
    assert host_command(sim, "/py")[:3] == ["/py", "-m", "simulator"]
    docker_sim = sim.model_copy(update={"lane": "docker", "image": PINNED})
    assert container_command(docker_sim) == simulator_args(sim)


def test_a_simulator_arm_s_gpu_ids_are_virtual_gpus(tmp_path: Path) -> None:
    sim = arm(lane="simulator", command=None, gpu_ids=[2, 3], simulator={"profile": "tiny"})
    flags = simulator_args(sim)
    assert flags[flags.index("--gpus") + 1] == "2"
    docker_sim = sim.model_copy(update={"lane": "docker", "image": PINNED})
    kwargs = container_kwargs(
        docker_sim, context(tmp_path, docker_sim), resolve_env(docker_sim, {}),
        parse_pinned(PINNED, where=""),
    )  # fmt: skip
    assert "device_requests" not in kwargs  # Docker is asked for no real GPU
    assert "--gpus" not in simulator_args(sim.model_copy(update={"gpu_ids": []}))


def test_a_list_fault_is_rendered_as_the_toml_array_the_simulator_parses() -> None:
    faults = {"missing_families": ["request_prefill_time_seconds"]}
    sim = arm(lane="simulator", command=None, simulator={"profile": "tiny", "faults": faults})
    flags = simulator_args(sim)
    assert flags[flags.index("--fault") + 1] == (
        'missing_families=["request_prefill_time_seconds"]'
    )


def test_container_arguments_carry_the_whole_recipe(tmp_path: Path) -> None:
    the_arm = arm(
        lane="docker",
        image=PINNED,
        command=None,
        engine_args=["--max-num-seqs", "4"],
        gpu_ids=[0, 1],
        mounts=[{"source": str(tmp_path), "target": "/models/x"}],
        memory_limit="52g",
        shm_size="16g",
    )
    ctx = context(tmp_path, the_arm)
    pinned = parse_pinned(PINNED, where="")
    kwargs = container_kwargs(the_arm, ctx, resolve_env(the_arm, {}), pinned)
    assert kwargs["image"] == PINNED and kwargs["command"] == ["--max-num-seqs", "4"]
    assert kwargs["network_mode"] == "host" and kwargs["ipc_mode"] == "host"
    assert kwargs["device_requests"][0]["DeviceIDs"] == ["0", "1"]
    assert kwargs["mounts"][0]["ReadOnly"] is True
    assert (kwargs["mem_limit"], kwargs["shm_size"]) == ("52g", "16g")
    assert kwargs["labels"] == {
        "faceoff.campaign": "c1",
        "faceoff.arm": "inc",
        "faceoff.matrix": "f" * 64,
        "faceoff.purpose": "campaign",
        "faceoff.run": "campaign-001",
    }
