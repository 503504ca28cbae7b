// Business days in an IANA time zone: which local calendar day an instant falls on, and the
// instants where that day starts and ends. Day boundaries come from Intl.DateTimeFormat, never
// from "24 hours later": a daylight-saving day is 23 or 25 hours long, and a few zones skip or
// repeat midnight itself. Pure functions of (instant, zone); the caches only memoize them.

/** One local calendar day: `[start, end)` in epoch ms. */
export interface BusinessDay {
  /** Local date, `YYYY-MM-DD`. */
  day: string;
  /** First instant of the day (inclusive). */
  start: number;
  /** First instant of the next day (exclusive end). */
  end: number;
}

const HOUR_MS = 3_600_000;

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    // en-US with explicit numeric parts: formatToParts gives stable, locale-independent fields.
    f = new Intl.DateTimeFormat("en-US", { timeZone, year: "numeric", month: "numeric", day: "numeric" });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Local date of an instant as a sortable number yyyymmdd (negative years never occur in event time). */
function localDateNumber(instant: number, timeZone: string): number {
  let year = 0;
  let month = 0;
  let day = 0;
  for (const part of formatter(timeZone).formatToParts(instant)) {
    if (part.type === "year") year = Number(part.value);
    else if (part.type === "month") month = Number(part.value);
    else if (part.type === "day") day = Number(part.value);
  }
  return year * 10_000 + month * 100 + day;
}

function dateString(n: number): string {
  const y = Math.floor(n / 10_000);
  const m = Math.floor(n / 100) % 100;
  const d = n % 100;
  return `${String(y).padStart(4, "0")}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`;
}

/** The yyyymmdd number of the calendar day after `n` (proleptic Gregorian, via UTC arithmetic). */
function nextDateNumber(n: number): number {
  const next = new Date(Date.UTC(Math.floor(n / 10_000), (Math.floor(n / 100) % 100) - 1, (n % 100) + 1));
  return next.getUTCFullYear() * 10_000 + (next.getUTCMonth() + 1) * 100 + next.getUTCDate();
}

const startCache = new Map<string, number>();

/**
 * First instant whose local date is `dateNumber` or later. The zone's midnight lies within
 * UTC-midnight ± 15 h (offsets span −12 h … +14 h), and local dates only move forward across that
 * range, so a binary search finds the boundary even where midnight does not exist (the day then
 * starts at 01:00) — no offset arithmetic to get wrong around transitions.
 */
function dayStart(dateNumber: number, timeZone: string): number {
  const cacheKey = `${timeZone}|${dateNumber}`;
  const cached = startCache.get(cacheKey);
  if (cached !== undefined) return cached;
  const utcMidnight = Date.UTC(Math.floor(dateNumber / 10_000), (Math.floor(dateNumber / 100) % 100) - 1, dateNumber % 100);
  let lo = utcMidnight - 15 * HOUR_MS; // local date < dateNumber here
  let hi = utcMidnight + 15 * HOUR_MS; // local date >= dateNumber here
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (localDateNumber(mid, timeZone) >= dateNumber) hi = mid;
    else lo = mid;
  }
  // Bounded memo: business days of live keys cluster around "today".
  if (startCache.size > 10_000) startCache.clear();
  startCache.set(cacheKey, hi);
  return hi;
}

/** The business day in `timeZone` that contains `instant`. */
export function businessDayOf(instant: number, timeZone: string): BusinessDay {
  const n = localDateNumber(instant, timeZone);
  return { day: dateString(n), start: dayStart(n, timeZone), end: dayStart(nextDateNumber(n), timeZone) };
}
