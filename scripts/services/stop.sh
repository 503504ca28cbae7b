#!/usr/bin/env bash
# Stop the services started by scripts/services/start.sh.
#
#   scripts/services/stop.sh                  # stop PostgreSQL and Kafka
#   scripts/services/stop.sh postgres|kafka   # stop only one
#   scripts/services/stop.sh --purge          # also delete their data folders
#                                             # (.keyflow/services/...; the jar cache stays)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

purge=0 want_pg=0 want_kafka=0
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    postgres | pg) want_pg=1 ;;
    kafka) want_kafka=1 ;;
    all) want_pg=1 want_kafka=1 ;;
    -h | --help) sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$arg' (expected: --purge, postgres, kafka)" ;;
  esac
done
if ((want_pg == 0 && want_kafka == 0)); then want_pg=1 want_kafka=1; fi

[[ -d "$SVC_DIR" ]] || { log "nothing to stop ($SVC_DIR does not exist)"; exit 0; }
exec 8>"$SVC_DIR/.lock"
flock -w 300 8 || die "timed out waiting for the lock $SVC_DIR/.lock"

stop_postgres() {
  [[ -d "$PG_DIR" ]] || return 0
  local pid
  pid="$(pg_pid)"
  if [[ -n "$pid" ]]; then
    log "postgres: stopping (pid $pid)"
    if ! (cd "$PG_DIR" && close_extra_fds && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" stop -m fast -w -t 60 >/dev/null); then
      log "postgres: pg_ctl stop failed; signalling pid $pid"
      kill_and_wait "$pid" postgres 30 || die "could not stop postgres pid $pid"
    fi
  else
    log "postgres: not running"
  fi
  rm -f "$PG_DIR/pid" "$PG_DATA/postmaster.pid"
  if ((purge)); then
    log "postgres: deleting $PG_DIR"
    rm -rf "$PG_DIR"
  fi
}

stop_kafka() {
  [[ -d "$KAFKA_DIR" ]] || return 0
  local pid stopped=0
  # The tracked pid, plus any broker started from this checkout's config whose pid file was lost.
  for pid in $(read_state "$KAFKA_DIR/pid") $(kafka_find_pids); do
    if is_alive "$pid" "$KAFKA_DIR/server.properties"; then
      log "kafka: stopping (pid $pid)"
      # A controlled shutdown of a single KRaft node takes a few seconds.
      kill_and_wait "$pid" kafka.Kafka 60 || die "could not stop kafka pid $pid"
      stopped=1
    fi
  done
  ((stopped)) || log "kafka: not running"
  rm -f "$KAFKA_DIR/pid"
  if ((purge)); then
    log "kafka: deleting $KAFKA_DIR"
    rm -rf "$KAFKA_DIR"
  fi
}

((want_pg)) && stop_postgres
((want_kafka)) && stop_kafka

# Keep the env file in step with what is still running.
if ((purge && want_pg && want_kafka)); then
  rm -f "$SVC_DIR/env"
else
  : >"$SVC_DIR/env"
  if [[ -f "$PG_DIR/pid" ]] && is_alive "$(read_state "$PG_DIR/pid")" postgres; then
    echo "DATABASE_URL=postgresql://keyflow:keyflow@127.0.0.1:$(read_state "$PG_DIR/port")/keyflow" >>"$SVC_DIR/env"
  fi
  if [[ -f "$KAFKA_DIR/pid" ]] && is_alive "$(read_state "$KAFKA_DIR/pid")" kafka.Kafka; then
    echo "KAFKA_BROKERS=127.0.0.1:$(read_state "$KAFKA_DIR/port")" >>"$SVC_DIR/env"
  fi
fi
log "stopped"
