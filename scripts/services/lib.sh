# shellcheck shell=bash disable=SC2034
# Shared helpers for scripts/services/start.sh and stop.sh. Sourced, not executed.
# Everything here writes diagnostics to stderr only.

SERVICES_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SERVICES_SCRIPT_DIR/../.." && pwd)"
KEYFLOW_DIR="$REPO_ROOT/.keyflow"
SVC_DIR="$KEYFLOW_DIR/services"
CACHE_DIR="$KEYFLOW_DIR/cache"

PG_BIN="${KEYFLOW_PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_SYSUSER="${KEYFLOW_PG_SYSUSER:-keyflow-pg}"
PG_DIR="$SVC_DIR/postgres"
PG_DATA="$PG_DIR/data"

KAFKA_VERSION="${KEYFLOW_KAFKA_VERSION:-4.1.1}"
KAFKA_DIR="$SVC_DIR/kafka"
KAFKA_LIBS="$CACHE_DIR/kafka-libs"

log() { printf '[services] %s\n' "$*" >&2; }
die() { printf '[services] ERROR: %s\n' "$*" >&2; exit 1; }

# is_alive PID [PATTERN]: the process exists and (optionally) its command line contains PATTERN.
is_alive() {
  local pid="${1:-}" pattern="${2:-}"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # A zombie is not alive for our purposes.
  if [[ -r "/proc/$pid/stat" ]]; then
    local state
    state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
    [[ "$state" != "Z" ]] || return 1
  fi
  if [[ -n "$pattern" && -r "/proc/$pid/cmdline" ]]; then
    { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$pattern" || return 1
  fi
  return 0
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  local port="${1:-}"
  [[ "$port" =~ ^[0-9]+$ ]] || return 1
  timeout 2 bash -c "exec 9<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
}

# free_port [PREFERRED]: prints PREFERRED if it can be bound on 127.0.0.1, else a fresh free port.
free_port() {
  local preferred="${1:-}"
  node -e '
    const net = require("net");
    const pref = Number(process.argv[1]) || 0;
    function tryPort(p, fallback) {
      const s = net.createServer();
      s.once("error", () => { if (fallback) tryPort(0, false); else process.exit(1); });
      s.listen({ port: p, host: "127.0.0.1", exclusive: true }, () => {
        const port = s.address().port;
        s.close(() => console.log(port));
      });
    }
    tryPort(pref, pref !== 0);
  ' "$preferred"
}

read_state() {
  if [[ -f "$1" ]]; then tr -d '[:space:]' <"$1" 2>/dev/null || true; fi
}

kill_and_wait() {
  # kill_and_wait PID PATTERN TIMEOUT_SECONDS: TERM, wait, then KILL.
  local pid="$1" pattern="$2" t="${3:-30}" i
  is_alive "$pid" "$pattern" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < t * 4; i++)); do
    is_alive "$pid" "$pattern" || return 0
    sleep 0.25
  done
  log "process $pid did not exit after ${t}s; sending KILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do
    is_alive "$pid" "$pattern" || return 0
    sleep 0.25
  done
  return 1
}

# as_pg CMD...: run a PostgreSQL binary as the unprivileged cluster owner.
as_pg() {
  if [[ "$(id -u)" -eq 0 ]]; then
    runuser -u "$PG_SYSUSER" -- "$@"
  else
    "$@"
  fi
}

# close_extra_fds: in a subshell that is about to exec a daemon, close every fd above 2 so the
# daemon holds neither our lock nor a caller's pipe (callers capture stdout with $(...) or pipes).
close_extra_fds() {
  local f fd
  for f in /proc/"$BASHPID"/fd/*; do
    fd="${f##*/}"
    if [[ "$fd" =~ ^[0-9]+$ ]] && ((fd > 2)); then
      eval "exec $fd>&-" 2>/dev/null || true
    fi
  done
}

# kafka_find_pids: pids of brokers started from THIS checkout's config (exact path match in the
# command line), e.g. an orphan whose pid file was lost. Never matches other brokers.
kafka_find_pids() {
  local d cmd
  for d in /proc/[0-9]*; do
    cmd="$({ tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null || true)"
    [[ "$cmd" == *" kafka.Kafka $KAFKA_DIR/server.properties"* ]] || continue
    is_alive "${d#/proc/}" kafka.Kafka && printf '%s\n' "${d#/proc/}"
  done
  return 0
}

# kafka_pid: the tracked broker pid if alive, else one found by kafka_find_pids.
kafka_pid() {
  local pid
  pid="$(read_state "$KAFKA_DIR/pid")"
  if is_alive "$pid" "$KAFKA_DIR/server.properties"; then
    printf '%s\n' "$pid"
    return 0
  fi
  kafka_find_pids | head -n1
}

# pg_pid: the postmaster pid from the data folder's lock file (authoritative), if alive.
pg_pid() {
  local pid=""
  [[ -f "$PG_DATA/postmaster.pid" ]] && pid="$(head -n1 "$PG_DATA/postmaster.pid" 2>/dev/null | tr -d '[:space:]')"
  if is_alive "$pid" postgres; then printf '%s\n' "$pid"; fi
  return 0
}

# pg_port: the port the running postmaster listens on (line 4 of postmaster.pid), else the state file.
pg_port() {
  local port=""
  [[ -f "$PG_DATA/postmaster.pid" ]] && port="$(sed -n 4p "$PG_DATA/postmaster.pid" 2>/dev/null | tr -d '[:space:]')"
  [[ -n "$port" ]] || port="$(read_state "$PG_DIR/port")"
  printf '%s\n' "$port"
}
