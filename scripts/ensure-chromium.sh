#!/usr/bin/env bash
# Make sure a Chromium for the browser tests exists; print its path on stdout.
# Debian: installs the `chromium` package (needs root, or sudo without a password).
# Override with CHROMIUM_PATH=/path/to/chromium.
set -euo pipefail

log() { printf '[ensure-chromium] %s\n' "$*" >&2; }

find_chromium() {
  local c
  for c in "${CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
    if [[ -n "$c" && -x "$c" ]]; then
      printf '%s\n' "$c"
      return 0
    fi
  done
  return 1
}

if path="$(find_chromium)"; then
  printf '%s\n' "$path"
  exit 0
fi

command -v apt-get >/dev/null || { log "chromium is missing and apt-get is not available; install Chromium and set CHROMIUM_PATH"; exit 1; }
sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
    log "chromium is missing; run as root: apt-get update && apt-get install -y chromium"
    exit 1
  fi
  sudo=(sudo -n)
fi

log "installing chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update >&2
"${sudo[@]}" apt-get install -y chromium >&2

path="$(find_chromium)" || { log "apt-get finished but no chromium binary was found"; exit 1; }
log "$("$path" --version 2>/dev/null || echo "installed $path")"
printf '%s\n' "$path"
