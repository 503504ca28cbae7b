// Durations and time zones as analysts write them ("250ms", "10m", "24h", "Europe/Paris"), and the
// zod helpers that let every operator param accept them while the engine only ever sees
// milliseconds. The inspector formats the normalized value back with formatDuration.
import { z } from "zod";

/**
 * JSON Schema keyword (from `z.toJSONSchema(spec.params, { io: "input" })`) telling the inspector
 * which editor a param wants: "duration", "time-zone", "cel" (Monaco), "field" (a record field).
 */
export const FORMAT_META_KEY = "x-keyflow-format";

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
type DurationUnit = keyof typeof UNIT_MS;
/** Largest unit first, so formatDuration picks the most readable unit. */
const UNITS_DESC: readonly DurationUnit[] = ["d", "h", "m", "s", "ms"];

/** One or more `<number><unit>` parts, e.g. `1h30m` or `1.5s`. */
const PART = /(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)/y;

/**
 * Parses "250ms", "10s", "10m", "24h", "7d", compounds such as "1h30m", and a bare number of ms
 * ("5000"). Returns undefined when the text is not a duration, so callers phrase their own error.
 */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s);
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    if (s[pos] === " ") {
      pos++;
      continue;
    }
    PART.lastIndex = pos;
    const m = PART.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2] as DurationUnit];
    pos = PART.lastIndex;
  }
  // Sub-millisecond remainders ("1.0005s") are not representable as event time.
  return Number.isInteger(total) ? total : undefined;
}

/**
 * Formats milliseconds the way an analyst would write them: 600000 → "10m", 90000 → "1m30s",
 * 250 → "250ms", 0 → "0ms". Round-trips with parseDuration for every non-negative integer.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms === 0) return "0ms";
  const sign = ms < 0 ? "-" : "";
  let rest = Math.abs(Math.round(ms));
  let out = "";
  for (const unit of UNITS_DESC) {
    const size = UNIT_MS[unit];
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return sign + out;
}

export interface DurationParamOptions {
  /** Accept 0 (e.g. allowed lateness); otherwise the duration must be positive. */
  allowZero?: boolean;
}

/**
 * A duration param: a number of milliseconds or a duration string, normalized to integer ms.
 * The message is phrased so the validator can print `node "vel": param "windowMs" must be a
 * positive duration (...)`.
 */
export function durationMs(opts: DurationParamOptions = {}) {
  const what = opts.allowZero ? "a duration ≥ 0" : "a positive duration";
  const hint = `${what} (milliseconds, or a string such as "250ms", "10s", "10m", "24h", "7d")`;
  return z
    .union([z.number(), z.string()], { error: `must be ${hint}` })
    .transform((value, ctx) => {
      const ms = typeof value === "number" ? value : parseDuration(value);
      const ok = ms !== undefined && Number.isInteger(ms) && (opts.allowZero ? ms >= 0 : ms > 0);
      if (!ok) {
        ctx.addIssue({ code: "custom", message: `must be ${hint}, got ${JSON.stringify(value)}` });
        return z.NEVER;
      }
      return ms;
    })
    .meta({ [FORMAT_META_KEY]: "duration" });
}

let zoneCache: ReadonlySet<string> | undefined;
function supportedTimeZones(): ReadonlySet<string> {
  zoneCache ??= new Set(Intl.supportedValuesOf("timeZone"));
  return zoneCache;
}

/**
 * True for IANA zone names this runtime knows. supportedValuesOf lists only canonical names, so
 * aliases ("UTC", "Asia/Calcutta") are confirmed by constructing a formatter.
 */
export function isValidTimeZone(zone: string): boolean {
  if (supportedTimeZones().has(zone)) return true;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** An IANA time zone param, e.g. for business days ("Europe/Paris", "America/Sao_Paulo", "UTC"). */
export function timeZone() {
  return z
    .string()
    .refine(isValidTimeZone, {
      error: (iss) => `must be an IANA time zone such as "Europe/Paris" or "UTC", got ${JSON.stringify(iss.input)}`,
    })
    .meta({ [FORMAT_META_KEY]: "time-zone" });
}
