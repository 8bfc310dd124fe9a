#!/usr/bin/env bash
# Validates the deployment files without a Docker engine:
#   docker-compose.yml  against the Compose spec (Debian's docker-compose `config`, every launch
#                       profile, both Compose profiles) and dclint; .env.example documents it
#   deploy/prometheus/  promtool check config / check rules / test rules
#   deploy/grafana/     JSON and provisioning files parse
#   vllm/profiles/      every profile complete; launch scripts parse
# Installs docker-compose and prometheus (for promtool) with apt-get when missing. Idempotent,
# leaves no files behind. Needs node_modules (npm ci) for dclint. Prints PASS/FAIL per check and
# exits non-zero when any check failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

failures=0
pass() { printf 'PASS  %s\n' "$1"; }
fail() {
  printf 'FAIL  %s\n' "$1"
  failures=$((failures + 1))
}
# check NAME COMMAND...: runs the command quietly, prints its output only when it fails.
check() {
  local name="$1" out
  shift
  if out="$("$@" 2>&1)"; then
    pass "$name"
  else
    fail "$name"
    printf '%s\n' "$out" | sed 's/^/      /'
  fi
}

# --- tools ----------------------------------------------------------------------------------
install_missing() {
  local packages=()
  command -v docker-compose >/dev/null 2>&1 || packages+=(docker-compose)
  command -v promtool >/dev/null 2>&1 || packages+=(prometheus)
  [[ ${#packages[@]} -eq 0 ]] && return 0
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "check-deploy: need ${packages[*]} (apt-get) and neither root nor sudo" >&2
      return 1
    }
    sudo=(sudo)
  fi
  echo "check-deploy: installing ${packages[*]}"
  "${sudo[@]}" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
}
check "tools: docker-compose and promtool installed" install_missing

# --- Compose --------------------------------------------------------------------------------
# docker-compose reads .env from the project directory: render in a scratch copy so no .env is
# created (or overwritten) in the checkout.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp -r docker-compose.yml .env.example vllm deploy "$scratch/"
cp .env.example "$scratch/.env"

compose_config() {
  (cd "$scratch" && env "$@" docker-compose -f docker-compose.yml config -q)
}
check "compose: docker-compose config (.env from .env.example)" compose_config
check "compose: docker-compose config with COMPOSE_PROFILES=llamacpp" compose_config COMPOSE_PROFILES=llamacpp

every_profile_renders() {
  local p name rendered ok=0
  for p in vllm/profiles/*.env; do
    name="$(basename "$p" .env)"
    rendered="$(cd "$scratch" && TOOLPROOF_PROFILE="$name" docker-compose -f docker-compose.yml config 2>&1)" || {
      printf 'profile %s:\n%s\n' "$name" "$rendered"
      ok=1
      continue
    }
    if ! grep -q "VLLM_TOOL_PARSER: $(grep '^VLLM_TOOL_PARSER=' "$p" | cut -d= -f2-)\$" <<<"$rendered"; then
      echo "profile $name: the vllm service does not get the profile's VLLM_TOOL_PARSER"
      ok=1
    fi
  done
  return "$ok"
}
check "compose: every vllm/profiles/*.env renders into the vllm service" every_profile_renders

missing_password_is_refused() {
  local out
  if out="$(cd "$scratch" && GRAFANA_ADMIN_PASSWORD= docker-compose -f docker-compose.yml config -q 2>&1)"; then
    echo "compose accepted an empty GRAFANA_ADMIN_PASSWORD"
    return 1
  fi
  grep -q GRAFANA_ADMIN_PASSWORD <<<"$out"
}
check "compose: an empty GRAFANA_ADMIN_PASSWORD is refused" missing_password_is_refused

env_example_documents_every_variable() {
  local var ok=0
  for var in $(grep -o '\${[A-Z0-9_]*' docker-compose.yml | tr -d '${' | sort -u); do
    grep -q "^${var}=" .env.example || {
      echo ".env.example does not document $var"
      ok=1
    }
  done
  return "$ok"
}
check "compose: .env.example documents every variable docker-compose.yml reads" env_example_documents_every_variable

check "compose: dclint docker-compose.yml" npx --no-install dclint docker-compose.yml

# --- Prometheus -----------------------------------------------------------------------------
check "prometheus: promtool check config deploy/prometheus/prometheus.yml" \
  promtool check config deploy/prometheus/prometheus.yml
check "prometheus: promtool check rules deploy/prometheus/alerts.yml" \
  promtool check rules deploy/prometheus/alerts.yml
check "prometheus: promtool test rules deploy/prometheus/alerts.test.yml" \
  promtool test rules deploy/prometheus/alerts.test.yml

# --- Grafana --------------------------------------------------------------------------------
grafana_files_parse() {
  node -e '
    const fs = require("node:fs");
    const yaml = require("yaml");
    const d = JSON.parse(fs.readFileSync("deploy/grafana/dashboards/toolproof.json", "utf8"));
    if (!d.uid || !Array.isArray(d.panels) || d.panels.length === 0) throw new Error("dashboard has no uid or panels");
    for (const f of ["datasources/prometheus.yml", "dashboards/toolproof.yml"]) {
      const doc = yaml.parse(fs.readFileSync("deploy/grafana/provisioning/" + f, "utf8"));
      if (doc.apiVersion !== 1) throw new Error(f + ": apiVersion must be 1");
    }'
}
check "grafana: dashboard JSON and provisioning YAML parse" grafana_files_parse

# --- vLLM profiles and launch scripts -------------------------------------------------------
profiles_complete() {
  local p key value ok=0
  local keys=(VLLM_MODEL VLLM_TOOL_PARSER VLLM_REASONING_PARSER VLLM_CHAT_TEMPLATE VLLM_EXTRA_ARGS TOOLPROOF_PARSERS)
  local required=" VLLM_MODEL VLLM_TOOL_PARSER TOOLPROOF_PARSERS "
  for p in vllm/profiles/*.env; do
    for key in "${keys[@]}"; do
      if ! grep -q "^${key}=" "$p"; then
        echo "$p: missing $key"
        ok=1
        continue
      fi
      value="$(grep "^${key}=" "$p" | head -n1 | cut -d= -f2-)"
      if [[ -z "$value" && "$required" == *" $key "* ]]; then
        echo "$p: $key is empty"
        ok=1
      fi
      if [[ "$value" == \"* || "$value" == \'* ]]; then
        echo "$p: $key is quoted (docker-compose 1.x would keep the quotes)"
        ok=1
      fi
    done
    if grep -v '^#' "$p" | grep -v '^$' | grep -qv '^[A-Z_]*='; then
      echo "$p: a line is neither a comment nor KEY=VALUE"
      ok=1
    fi
    grep -q "profiles/$(basename "$p")" vllm/README.md || {
      echo "$p: no row in vllm/README.md"
      ok=1
    }
  done
  return "$ok"
}
check "vllm: every vllm/profiles/*.env is complete and listed in vllm/README.md" profiles_complete
check "vllm: launch scripts parse (bash -n, sh -n)" bash -c 'bash -n vllm/launch.sh && sh -n deploy/llamacpp/launch.sh'
if command -v shellcheck >/dev/null 2>&1; then
  check "shellcheck: launch scripts and this script" shellcheck vllm/launch.sh deploy/llamacpp/launch.sh .ci/check-deploy.sh
fi

# --------------------------------------------------------------------------------------------
if [[ $failures -gt 0 ]]; then
  echo "check-deploy: $failures check(s) FAILED"
  exit 1
fi
echo "check-deploy: all checks passed"
