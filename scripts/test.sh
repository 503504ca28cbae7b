#!/usr/bin/env bash
# `npm test`: installs and starts what the tests need (Chromium, PostgreSQL, Kafka), runs the
# typecheck and every test project (unit, integration, e2e), and stops the services it started.
# Services that were already up (`npm run services`) are reused and left running.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export NEXT_TELEMETRY_DISABLED=1
reports="$root/.keyflow/test-reports"
rm -rf "$reports" && mkdir -p "$reports"
t0=$(date +%s)
phase() { echo; echo "== $1 ($(( $(date +%s) - t0 ))s)"; }

phase "chromium"
bash scripts/ensure-chromium.sh

phase "services"
already_up=0
if bash scripts/services/status.sh >/dev/null 2>&1; then already_up=1; fi
env_lines="$(bash scripts/services/start.sh)"
echo "$env_lines"
while IFS= read -r line; do
  case "$line" in DATABASE_URL=*|KAFKA_BROKERS=*) export "$line" ;; esac
done <<<"$env_lines"
stop_services() { if [ "$already_up" = 0 ] && [ -z "${KEYFLOW_KEEP_SERVICES:-}" ]; then bash scripts/services/stop.sh >/dev/null 2>&1 || true; fi; }
trap stop_services EXIT

phase "prisma client"
npm run -s db:generate -w @keyflow/db

phase "typecheck"
npm run -s typecheck

status=0
for project in unit integration e2e; do
  phase "vitest --project $project"
  npx vitest run --project "$project" --reporter=default --reporter=json \
    --outputFile.json="$reports/$project.json" || status=1
done

phase "summary"
node -e '
const fs = require("fs"); let passed = 0, failed = 0, skipped = 0;
for (const p of ["unit", "integration", "e2e"]) {
  const f = process.argv[1] + "/" + p + ".json";
  if (!fs.existsSync(f)) { console.log(`${p}: no report (the run failed before tests)`); failed++; continue; }
  const r = JSON.parse(fs.readFileSync(f, "utf8"));
  console.log(`${p}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
  passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests + r.numTodoTests;
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
' "$reports"
echo "npm test took $(( $(date +%s) - t0 ))s"
exit $status
