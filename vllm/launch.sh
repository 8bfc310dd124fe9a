#!/usr/bin/env bash
# Starts `vllm serve` from a launch profile (vllm/profiles/<name>.env).
#
# docker-compose.yml mounts this file into the vLLM container, loads the chosen profile with
# `env_file:` and replaces the image's entrypoint with this script. Compose can only interpolate
# variables it knows when it reads the file (.env, the shell), not the ones an env_file holds, so
# the flags are assembled here, inside the container, where the profile's variables are set.
#
# Profile variables (see vllm/README.md):
#   VLLM_MODEL             Hugging Face repo id or a path inside the container (required)
#   VLLM_TOOL_PARSER       --tool-call-parser, as vLLM spells it (required)
#   VLLM_REASONING_PARSER  --reasoning-parser (optional)
#   VLLM_CHAT_TEMPLATE     --chat-template: a path in the image (/vllm-workspace/examples/...) or
#                          under /templates (vllm/templates/ in the repo) (optional)
#   VLLM_EXTRA_ARGS        further flags the model family needs, split on whitespace (optional)
#   TOOLPROOF_PARSERS      toolproof parser families for this model (documentation only here)
# Site variables, from .env through the compose file (they win over the profile):
#   VLLM_MODEL_OVERRIDE    serve another checkpoint of the same family (a quantised one, say)
#   VLLM_SERVED_MODEL_NAME the model name clients send (default: the model id)
#   VLLM_ARGS              site flags: --tensor-parallel-size, --max-model-len, ...
#   VLLM_API_KEY           read by vLLM itself (never put on the command line, never logged)
# Arguments given to the script are appended last.
set -euo pipefail

fail() {
  echo "toolproof vllm launch: $*" >&2
  exit 64
}

model="${VLLM_MODEL_OVERRIDE:-${VLLM_MODEL:-}}"
[[ -n "$model" ]] || fail "VLLM_MODEL is empty: is TOOLPROOF_PROFILE in .env the name of a file in vllm/profiles/?"
[[ -n "${VLLM_TOOL_PARSER:-}" ]] || fail "VLLM_TOOL_PARSER is empty in the profile"

# Compose always sets the variable; an empty key must mean "no key", whatever the vLLM release.
if [[ -z "${VLLM_API_KEY:-}" ]]; then unset VLLM_API_KEY; fi

args=(serve "$model" --host 0.0.0.0 --port "${VLLM_PORT:-8000}"
  --enable-auto-tool-choice --tool-call-parser "$VLLM_TOOL_PARSER")

if [[ -n "${VLLM_REASONING_PARSER:-}" ]]; then
  args+=(--reasoning-parser "$VLLM_REASONING_PARSER")
fi
if [[ -n "${VLLM_CHAT_TEMPLATE:-}" ]]; then
  # Checked here so a typo fails in a second, with the path in the message, instead of after
  # vLLM has spent minutes loading weights (older releases even took an unreadable path as
  # inline template text).
  [[ -f "$VLLM_CHAT_TEMPLATE" ]] || fail "chat template not found in the container: $VLLM_CHAT_TEMPLATE"
  args+=(--chat-template "$VLLM_CHAT_TEMPLATE")
fi
if [[ -n "${VLLM_SERVED_MODEL_NAME:-}" ]]; then
  args+=(--served-model-name "$VLLM_SERVED_MODEL_NAME")
fi

# Word splitting on purpose: these hold several flags. An argument that contains spaces (a JSON
# value) belongs in the compose `command:` instead, which is passed through as "$@".
read -r -a profile_extra <<<"${VLLM_EXTRA_ARGS:-}"
read -r -a site_extra <<<"${VLLM_ARGS:-}"
args+=("${profile_extra[@]}" "${site_extra[@]}" "$@")

echo "toolproof vllm launch: vllm ${args[*]}" >&2
exec vllm "${args[@]}"
