// What an analyst types for a backtest range: offsets per partition, or an instant.
/** "0:100, 1:250" → { "0": 100, "1": 250 }; null when it is not that shape. */
export function parseOffsets(text: string): Record<string, number> | null {
  const out: Record<string, number> = {};
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\d+)\s*:\s*(\d+)$/.exec(part);
    if (!m || m[1] === undefined || m[2] === undefined) return null;
    out[m[1]] = Number(m[2]);
  }
  return Object.keys(out).length > 0 ? out : null;
}

/** An instant typed as ISO-8601 (2026-12-01T10:00:00Z) or epoch ms. */
export function parseInstant(text: string): number | null {
  const t = text.trim();
  if (/^\d+$/.test(t)) return Number(t);
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms;
}
