#!/bin/sh
# Starts llama-server for toolproof's llamacpp Compose profile.
#
# docker-compose.yml mounts this file into ghcr.io/ggml-org/llama.cpp:server-cuda and makes it
# the entrypoint. It exists because the model comes either from a GGUF file in the mounted
# models folder (-m) or from a Hugging Face repo (-hf), and Compose cannot choose a flag.
#
#   LLAMACPP_MODEL_FILE  a .gguf file name (or sub-path) under /models (LLAMACPP_MODELS_DIR)
#   LLAMACPP_HF_REPO     otherwise: <user>/<repo>[:quant], downloaded into the llamacpp-cache volume
#   LLAMACPP_CTX_SIZE    context size (-c)
#   LLAMACPP_ARGS        more flags, split on whitespace (e.g. --chat-template-file /models/x.jinja)
#   LLAMA_API_KEY        read by llama-server itself when set (never logged)
#   LLAMA_SERVER_BIN     the server binary (default /app/llama-server, as in the image; tests
#                        point it at a stub)
#
# --jinja makes llama-server render the model's own chat template and parse tool calls
# natively; --metrics exposes /metrics for Prometheus; -ngl 999 offloads every layer.
set -eu

if [ -z "${LLAMA_API_KEY:-}" ]; then unset LLAMA_API_KEY; fi

if [ -n "${LLAMACPP_MODEL_FILE:-}" ]; then
  if [ ! -f "/models/${LLAMACPP_MODEL_FILE}" ]; then
    echo "toolproof llama-server launch: /models/${LLAMACPP_MODEL_FILE} not found (LLAMACPP_MODELS_DIR)" >&2
    exit 64
  fi
  set -- -m "/models/${LLAMACPP_MODEL_FILE}" "$@"
elif [ -n "${LLAMACPP_HF_REPO:-}" ]; then
  set -- -hf "${LLAMACPP_HF_REPO}" "$@"
else
  echo "toolproof llama-server launch: set LLAMACPP_MODEL_FILE or LLAMACPP_HF_REPO in .env" >&2
  exit 64
fi

# Word splitting of LLAMACPP_ARGS is intended: it holds several flags.
# shellcheck disable=SC2086
set -- "$@" --host 0.0.0.0 --port 8080 --jinja --metrics -ngl 999 -c "${LLAMACPP_CTX_SIZE:-32768}" ${LLAMACPP_ARGS:-}

echo "toolproof llama-server launch: llama-server $*" >&2
exec "${LLAMA_SERVER_BIN:-/app/llama-server}" "$@"
