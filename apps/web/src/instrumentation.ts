// Runs once when a Next server process starts: the reconciler (server/services/reconciler.ts), which
// keeps the runner's jobs in line with the deployments the database says should run.
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const raw = process.env.KEYFLOW_RECONCILE_INTERVAL_MS;
  const intervalMs = raw === undefined || raw.trim() === "" ? 3_000 : Number(raw);
  if (!Number.isFinite(intervalMs) || intervalMs < 0) throw new Error(`KEYFLOW_RECONCILE_INTERVAL_MS must be a number of milliseconds (0 turns the reconciler off), not "${raw}"`);
  if (intervalMs === 0) return;
  const [{ startReconciler }, { getDb }, { serverEnv }] = await Promise.all([import("./server/services/reconciler"), import("./server/db"), import("./server/env")]);
  startReconciler({ prisma: async () => (await getDb()).prisma, env: serverEnv, intervalMs });
}
