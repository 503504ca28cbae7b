#!/usr/bin/env bash
# Start the real services the tests need: a private PostgreSQL 15 cluster and a
# single-node Apache Kafka 4.x (KRaft) broker, both on free ports on 127.0.0.1.
#
#   scripts/services/start.sh            # both
#   scripts/services/start.sh postgres   # only PostgreSQL
#   scripts/services/start.sh kafka      # only Kafka
#
# stdout (and nothing else on stdout):
#   DATABASE_URL=postgresql://keyflow:keyflow@127.0.0.1:PORT/keyflow
#   KAFKA_BROKERS=127.0.0.1:PORT
# Diagnostics go to stderr. Re-running reuses servers that are already up.
# State and data live in .keyflow/services/ (git-ignored); Kafka jars are cached
# in .keyflow/cache/kafka-libs/. Stop with scripts/services/stop.sh [--purge].
#
# Environment overrides: KEYFLOW_KAFKA_VERSION (default 4.1.1), KEYFLOW_PG_BIN,
# KEYFLOW_PG_SYSUSER (default keyflow-pg), KEYFLOW_KAFKA_HEAP (default 768m),
# KEYFLOW_KAFKA_READY_TIMEOUT (seconds, default 90).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# Keep stdout for the final KEY=VALUE lines only.
exec 3>&1 1>&2

want_pg=0 want_kafka=0
if [[ $# -eq 0 ]]; then
  want_pg=1 want_kafka=1
else
  for arg in "$@"; do
    case "$arg" in
      postgres | pg) want_pg=1 ;;
      kafka) want_kafka=1 ;;
      all) want_pg=1 want_kafka=1 ;;
      -h | --help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) die "unknown argument '$arg' (expected: postgres, kafka)" ;;
    esac
  done
fi

mkdir -p "$SVC_DIR" "$CACHE_DIR"
# One start/stop at a time (concurrent test runners may call this together).
exec 8>"$SVC_DIR/.lock"
flock -w 300 8 || die "timed out waiting for the lock $SVC_DIR/.lock"

# ---------------------------------------------------------------- PostgreSQL

pg_socket_dir() {
  # Unix socket paths are limited to 107 bytes; fall back to /tmp for very deep checkouts.
  if (( ${#PG_DATA} + 20 < 107 )); then
    printf '%s' "$PG_DATA"
  else
    printf '/tmp/keyflow-pg-%s' "$(printf '%s' "$PG_DATA" | md5sum | cut -c1-12)"
  fi
}

pg_running() {
  local pid port
  pid="$(pg_pid)"
  port="$(pg_port)"
  [[ -n "$pid" ]] && port_open "$port" && "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -t 5 || return 1
  # Keep the state files in step (e.g. after a pid file was lost or overwritten).
  [[ "$(read_state "$PG_DIR/pid")" == "$pid" ]] || printf '%s\n' "$pid" >"$PG_DIR/pid"
  [[ "$(read_state "$PG_DIR/port")" == "$port" ]] || printf '%s\n' "$port" >"$PG_DIR/port"
}

ensure_pg_user() {
  [[ "$(id -u)" -eq 0 ]] || return 0
  if ! id -u "$PG_SYSUSER" >/dev/null 2>&1; then
    log "creating system user $PG_SYSUSER"
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_SYSUSER" ||
      id -u "$PG_SYSUSER" >/dev/null 2>&1 || die "useradd $PG_SYSUSER failed"
  fi
  chown -R "$PG_SYSUSER:" "$PG_DIR"
  if ! runuser -u "$PG_SYSUSER" -- test -w "$PG_DIR"; then
    die "$PG_SYSUSER cannot reach $PG_DIR (a parent folder of the repo is not traversable by other users; chmod o+x it)"
  fi
}

pg_init() {
  if [[ -f "$PG_DIR/initialized" && -f "$PG_DATA/PG_VERSION" ]]; then
    return 0
  fi
  log "postgres: initdb into $PG_DATA"
  rm -rf "$PG_DATA"
  mkdir -p "$PG_DATA"
  chmod 700 "$PG_DATA"
  local pwfile="$PG_DIR/.pwfile"
  printf 'keyflow\n' >"$pwfile"
  ensure_pg_user
  as_pg "$PG_BIN/initdb" -D "$PG_DATA" --username=keyflow --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 \
    --no-instructions >"$PG_DIR/initdb.log" 2>&1 ||
    { tail -n 30 "$PG_DIR/initdb.log" >&2; die "initdb failed (log: $PG_DIR/initdb.log)"; }
  rm -f "$pwfile"
  cat >>"$PG_DATA/postgresql.conf" <<EOF

# --- keyflow test cluster (scripts/services/start.sh) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$(pg_socket_dir)'
max_connections = 200
shared_buffers = 128MB
fsync = off
synchronous_commit = off
full_page_writes = off
logging_collector = off
log_min_messages = warning
timezone = 'UTC'
EOF
  # Password auth over TCP (127.0.0.1 only); trust on the private unix socket.
  cat >"$PG_DATA/pg_hba.conf" <<'EOF'
# TYPE  DATABASE  USER  ADDRESS        METHOD
local   all       all                  trust
host    all       all   127.0.0.1/32   scram-sha-256
EOF
  chown -R "$PG_SYSUSER:" "$PG_DATA" 2>/dev/null || true
  touch "$PG_DIR/initialized"
}

start_postgres() {
  [[ -x "$PG_BIN/pg_ctl" ]] || die "PostgreSQL binaries not found in $PG_BIN"
  mkdir -p "$PG_DIR"
  if pg_running; then
    log "postgres: reusing server (pid $(pg_pid), port $(pg_port))"
    return 0
  fi
  ensure_pg_user
  pg_init

  # Anything left from an earlier run that is not healthy: stop it or clear its lock file.
  if [[ -f "$PG_DATA/postmaster.pid" ]]; then
    local oldpid
    oldpid="$(head -n1 "$PG_DATA/postmaster.pid" | tr -d '[:space:]')"
    if is_alive "$oldpid" postgres; then
      log "postgres: a server (pid $oldpid) is running but not answering; stopping it"
      as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" stop -m immediate -w -t 30 >/dev/null 2>&1 ||
        kill_and_wait "$oldpid" postgres 30 || true
    fi
    rm -f "$PG_DATA/postmaster.pid"
  fi
  # Socket lock files of a killed server (postgres treats a zombie or reused pid as alive).
  local lockf lockpid
  for lockf in "$(pg_socket_dir)"/.s.PGSQL.*.lock; do
    [[ -f "$lockf" ]] || continue
    lockpid="$(head -n1 "$lockf" | tr -d '[:space:]')"
    if ! is_alive "$lockpid" postgres; then
      rm -f "$lockf" "${lockf%.lock}"
    fi
  done

  local port sockdir
  port="$(free_port "$(read_state "$PG_DIR/port")")" || die "no free port for postgres"
  sockdir="$(pg_socket_dir)"
  if [[ "$sockdir" != "$PG_DATA" ]]; then
    mkdir -p "$sockdir"
    [[ "$(id -u)" -ne 0 ]] || chown "$PG_SYSUSER:" "$sockdir"
    chmod 700 "$sockdir"
  fi
  : >"$PG_DIR/server.log"
  [[ "$(id -u)" -ne 0 ]] || chown "$PG_SYSUSER:" "$PG_DIR/server.log"

  log "postgres: starting on 127.0.0.1:$port"
  if ! (cd "$PG_DIR" && close_extra_fds && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DIR/server.log" \
    -o "-p $port" -w -t 60 start >/dev/null); then
    tail -n 40 "$PG_DIR/server.log" >&2 || true
    die "postgres failed to start (log: $PG_DIR/server.log)"
  fi
  local pid
  pid="$(head -n1 "$PG_DATA/postmaster.pid" | tr -d '[:space:]')"
  printf '%s\n' "$pid" >"$PG_DIR/pid"
  printf '%s\n' "$port" >"$PG_DIR/port"

  # Create the application database (idempotent).
  local psql=("$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$sockdir" -p "$port" -U keyflow)
  if [[ "$(as_pg "${psql[@]}" -d postgres -tAc "select 1 from pg_database where datname = 'keyflow'")" != "1" ]]; then
    log "postgres: creating database keyflow"
    as_pg "${psql[@]}" -d postgres -c 'create database keyflow' >/dev/null
  fi
  pg_running || die "postgres started but does not answer on 127.0.0.1:$port"
  log "postgres: ready (pid $pid, port $port, log $PG_DIR/server.log)"
}

# --------------------------------------------------------------------- Kafka

kafka_configured_port() {
  # The PLAINTEXT port in the config the running broker was started with.
  sed -n 's#^listeners=PLAINTEXT://127\.0\.0\.1:\([0-9]*\),.*#\1#p' "$KAFKA_DIR/server.properties" 2>/dev/null | head -n1
}

kafka_running() {
  local pid port
  pid="$(kafka_pid)"
  port="$(kafka_configured_port)"
  [[ -n "$pid" ]] && port_open "$port" || return 1
  [[ "$(read_state "$KAFKA_DIR/pid")" == "$pid" ]] || printf '%s\n' "$pid" >"$KAFKA_DIR/pid"
  [[ "$(read_state "$KAFKA_DIR/port")" == "$port" ]] || printf '%s\n' "$port" >"$KAFKA_DIR/port"
}

fetch_kafka_libs() {
  if [[ -f "$KAFKA_LIBS/.complete" && "$(read_state "$KAFKA_LIBS/.complete")" == "$KAFKA_VERSION" ]]; then
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch the Kafka jars)"
  log "kafka: fetching Apache Kafka $KAFKA_VERSION jars from Maven Central (cached in $KAFKA_LIBS)"
  local tmp="$CACHE_DIR/kafka-libs.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  local mvnlog="$CACHE_DIR/kafka-libs-fetch.log"
  if ! mvn -B -Dstyle.color=never --no-transfer-progress -f "$SERVICES_SCRIPT_DIR/kafka/pom.xml" \
    -Dkafka.version="$KAFKA_VERSION" -DincludeScope=runtime -DoutputDirectory="$tmp" \
    dependency:copy-dependencies >"$mvnlog" 2>&1; then
    tail -n 40 "$mvnlog" >&2 || true
    rm -rf "$tmp"
    die "maven could not fetch the Kafka jars (log: $mvnlog)"
  fi
  # Maven may create target/ next to the pom; it is not needed.
  rm -rf "$SERVICES_SCRIPT_DIR/kafka/target"
  ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die "kafka_2.13 jar missing after fetch"; }
  printf '%s\n' "$KAFKA_VERSION" >"$tmp/.complete"
  rm -rf "$KAFKA_LIBS"
  mv "$tmp" "$KAFKA_LIBS"
}

kafka_java() {
  java -cp "$KAFKA_LIBS/*" "$@"
}

write_kafka_config() {
  local port="$1" cport="$2"
  mkdir -p "$KAFKA_DIR/data"
  cat >"$KAFKA_DIR/server.properties" <<EOF
# Generated by scripts/services/start.sh; rewritten on every start.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$KAFKA_DIR/data
num.partitions=3
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
# Retention by size, never by time: the sinks stamp each message with its record's event time
# (as Kafka Streams does), and the tests' and benchmarks' events are dated 2026-01-01, so any time
# retention deletes their output at the broker's next check (every 5 minutes, 30 s after start).
# With 24 h it did, mid-test: the cause of shadow-enforcing.int's failures in CI, whose integration
# tests start about five minutes after the broker. The byte bound keeps benchmark topics in check.
log.retention.ms=-1
log.retention.bytes=1073741824
log.segment.bytes=67108864
delete.topic.enable=true
EOF
  cat >"$KAFKA_DIR/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $KAFKA_DIR/server.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
EOF
}

start_kafka() {
  command -v java >/dev/null || die "java not found (JDK 17+ needed for Kafka)"
  mkdir -p "$KAFKA_DIR"
  if kafka_running; then
    log "kafka: reusing broker (pid $(read_state "$KAFKA_DIR/pid"), port $(read_state "$KAFKA_DIR/port"))"
    return 0
  fi
  # A broker from an earlier run (on this data folder) that is alive but not answering: stop it.
  local oldpid
  for oldpid in $(read_state "$KAFKA_DIR/pid") $(kafka_find_pids); do
    if is_alive "$oldpid" "$KAFKA_DIR/server.properties"; then
      log "kafka: broker pid $oldpid is alive but not answering; stopping it"
      kill_and_wait "$oldpid" kafka.Kafka 30 || die "could not stop stale broker $oldpid"
    fi
  done
  rm -f "$KAFKA_DIR/pid"

  fetch_kafka_libs

  local port cport
  port="$(free_port "$(read_state "$KAFKA_DIR/port")")" || die "no free port for kafka"
  cport="$(free_port "$(read_state "$KAFKA_DIR/controller-port")")" || die "no free controller port"
  if [[ "$cport" == "$port" ]]; then cport="$(free_port)"; fi
  write_kafka_config "$port" "$cport"

  # Data formatted by another Kafka version (KEYFLOW_KAFKA_VERSION changed): test data, start over.
  if [[ -f "$KAFKA_DIR/data/meta.properties" && "$(read_state "$KAFKA_DIR/kafka-version")" != "$KAFKA_VERSION" ]]; then
    log "kafka: data was formatted by Kafka $(read_state "$KAFKA_DIR/kafka-version"); reformatting for $KAFKA_VERSION"
    rm -rf "$KAFKA_DIR/data"
  fi
  if [[ ! -f "$KAFKA_DIR/data/meta.properties" ]]; then
    local cluster_id
    cluster_id="$(read_state "$KAFKA_DIR/cluster-id")"
    if [[ -z "$cluster_id" ]]; then
      cluster_id="$(kafka_java kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1 | tr -d '[:space:]')"
      [[ -n "$cluster_id" ]] || die "could not generate a Kafka cluster id"
      printf '%s\n' "$cluster_id" >"$KAFKA_DIR/cluster-id"
    fi
    log "kafka: formatting storage (cluster id $cluster_id)"
    rm -rf "$KAFKA_DIR/data"
    mkdir -p "$KAFKA_DIR/data"
    kafka_java -Dlog4j2.configurationFile="$KAFKA_DIR/log4j2.properties" \
      kafka.tools.StorageTool format --ignore-formatted -t "$cluster_id" \
      -c "$KAFKA_DIR/server.properties" >"$KAFKA_DIR/format.log" 2>&1 ||
      { cat "$KAFKA_DIR/format.log" >&2; die "kafka storage format failed"; }
    printf '%s\n' "$KAFKA_VERSION" >"$KAFKA_DIR/kafka-version"
  fi

  log "kafka: starting $KAFKA_VERSION broker on 127.0.0.1:$port (controller $cport)"
  # Keep the previous run's log as server.log.prev; this run's log starts empty.
  [[ ! -f "$KAFKA_DIR/server.log" ]] || mv -f "$KAFKA_DIR/server.log" "$KAFKA_DIR/server.log.prev"
  # setsid: own session, so the broker survives the calling shell / npm process group.
  # close_extra_fds: the daemon must hold neither our stdout pipe (fd 3) nor the lock (fd 8).
  (
    close_extra_fds
    exec setsid nohup java -Xms256m -Xmx"${KEYFLOW_KAFKA_HEAP:-768m}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
      -Djava.awt.headless=true -Dkafka.logs.dir="$KAFKA_DIR" \
      -Dlog4j2.configurationFile="$KAFKA_DIR/log4j2.properties" \
      -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_DIR/server.properties" \
      </dev/null >"$KAFKA_DIR/stdout.log" 2>&1
  ) &
  local pid=$!
  printf '%s\n' "$pid" >"$KAFKA_DIR/pid"
  printf '%s\n' "$port" >"$KAFKA_DIR/port"
  printf '%s\n' "$cport" >"$KAFKA_DIR/controller-port"

  local timeout="${KEYFLOW_KAFKA_READY_TIMEOUT:-90}" deadline ready=0
  deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    # No command-line check here: for a moment the pid is still the forked shell.
    if ! is_alive "$pid"; then
      break
    fi
    # grep the file itself: `tail | grep -q` under pipefail fails when grep exits at the first match
    # while tail is still writing (SIGPIPE), which a log grown by thousands of loaded groups triggers.
    if port_open "$port" && grep -q 'Kafka Server started' "$KAFKA_DIR/server.log" 2>/dev/null; then
      ready=1
      break
    fi
    sleep 0.5
  done
  if ((ready == 1)) && ! is_alive "$pid" kafka.Kafka; then
    ready=0
  fi
  if ((ready == 0)); then
    if is_alive "$pid"; then
      log "kafka: broker did not become ready within ${timeout}s"
    else
      log "kafka: broker exited during startup"
    fi
    log "kafka: errors in $KAFKA_DIR/server.log:"
    cat "$KAFKA_DIR/server.log" 2>/dev/null |
      grep -E -A3 ' (ERROR|FATAL) ' | head -n 40 >&2 || true
    log "kafka: last log lines:"
    tail -n 15 "$KAFKA_DIR/server.log" >&2 2>/dev/null || true
    tail -n 20 "$KAFKA_DIR/stdout.log" >&2 2>/dev/null || true
    kill_and_wait "$pid" kafka.Kafka 15 || true
    rm -f "$KAFKA_DIR/pid"
    exit 1
  fi
  log "kafka: ready (pid $pid, port $port, log $KAFKA_DIR/server.log)"
}

# ---------------------------------------------------------------------- main

out=()
if ((want_pg)); then
  start_postgres
  out+=("DATABASE_URL=postgresql://keyflow:keyflow@127.0.0.1:$(pg_port)/keyflow")
fi
if ((want_kafka)); then
  start_kafka
  out+=("KAFKA_BROKERS=127.0.0.1:$(read_state "$KAFKA_DIR/port")")
fi

# Also leave the values in a file for tools that do not capture stdout.
{
  if pg_running; then echo "DATABASE_URL=postgresql://keyflow:keyflow@127.0.0.1:$(read_state "$PG_DIR/port")/keyflow"; fi
  if kafka_running; then echo "KAFKA_BROKERS=127.0.0.1:$(read_state "$KAFKA_DIR/port")"; fi
} >"$SVC_DIR/env"

printf '%s\n' "${out[@]}" >&3
