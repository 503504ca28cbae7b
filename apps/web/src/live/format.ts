// How the canvas writes live figures: short, fixed-width friendly, no locale surprises.

export function formatRate(perSecond: number): string {
  if (perSecond >= 1_000_000) return `${(perSecond / 1_000_000).toFixed(1)}M/s`;
  if (perSecond >= 10_000) return `${Math.round(perSecond / 1000)}k/s`;
  if (perSecond >= 1_000) return `${(perSecond / 1000).toFixed(1)}k/s`;
  if (perSecond >= 10 || perSecond === 0) return `${Math.round(perSecond)}/s`;
  return `${perSecond.toFixed(1)}/s`;
}

export function formatCount(n: number): string {
  if (n >= 1_000_000_000) return `${(n / 1_000_000_000).toFixed(1)}G`;
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 10_000) return `${(n / 1000).toFixed(1)}k`;
  return String(Math.round(n));
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function formatBytes(bytes: number): string {
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value >= 100 ? Math.round(value) : value.toFixed(1)} ${UNITS[unit]}`;
}

/** A duration in ms as `850 ms`, `12.3 s`, `4m 05s`, `2h 03m`, `3d 04h`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  const sign = ms < 0 ? "-" : "";
  if (abs < 1000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(1)} s`;
  const s = Math.floor(abs / 1000);
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 3600) return `${sign}${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  return `${sign}${Math.floor(s / 86_400)}d ${pad(Math.floor((s % 86_400) / 3600))}h`;
}

/** Watermark lag: how far event time trails the snapshot's clock; "none" without a watermark. */
export function formatWatermarkLag(watermark: number | null, now: number): string {
  if (watermark === null) return "none";
  return formatDuration(Math.max(0, now - watermark));
}
