#!/usr/bin/env bash
# Exits 0 when both test services (PostgreSQL, Kafka) of this checkout are running, 1 otherwise;
# npm test uses it to leave alone the services a developer started with `npm run services`.
set -euo pipefail
# shellcheck source=scripts/services/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
pg="$(pg_pid)"
kafka="$(kafka_pid || true)"
echo "postgres: ${pg:-stopped}"
echo "kafka: ${kafka:-stopped}"
[[ -n "$pg" && -n "$kafka" ]]
