// Event-time extraction at the sources: a record's timestamp from its `timestampField`, as epoch
// milliseconds or an ISO-8601 string, parsed without the local time zone or Date's lenient
// parser (whose accepted formats and zone defaults differ between engines), so every process
// reads the same instant.
import type { JsonValue } from "../core/api";

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Milliseconds since the epoch of an ISO-8601 date or date-time, or undefined when `s` is not one.
 * A date-time without an offset is read as UTC (not local time: a job must not change meaning
 * with the machine's zone). Fractions beyond milliseconds are truncated.
 */
export function parseIsoTimestamp(s: string): number | undefined {
  const m = ISO.exec(s);
  if (!m) return undefined;
  const [, ys, mos, ds, hs, mis, ss, frac, zone] = m;
  const y = Number(ys);
  const mo = Number(mos);
  const d = Number(ds);
  const h = hs === undefined ? 0 : Number(hs);
  const mi = mis === undefined ? 0 : Number(mis);
  const sec = ss === undefined ? 0 : Number(ss);
  const ms = frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, "0"));
  if (mo < 1 || mo > 12 || d < 1 || d > (DAYS_IN_MONTH[mo - 1] as number) || h > 23 || mi > 59 || sec > 59) return undefined;
  if (mo === 2 && d === 29 && !(y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0))) return undefined;
  let offsetMin = 0;
  if (zone !== undefined && zone !== "Z" && zone !== "z") {
    const sign = zone[0] === "-" ? -1 : 1;
    const digits = zone.slice(1).replace(":", "");
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
    if (oh > 23 || om > 59) return undefined;
    offsetMin = sign * (oh * 60 + om);
  }
  const utc = Date.UTC(y, mo - 1, d, h, mi, sec, ms);
  // Date.UTC maps years 0-99 to 1900-1999; ISO years are literal.
  const fixed = y < 100 ? new Date(utc).setUTCFullYear(y) : utc;
  return fixed - offsetMin * 60_000;
}

/**
 * The event times a record may have: those of a Date (±8.64e15 ms, years −271821 to 275760). Past
 * them time arithmetic stops being exact (2^53 is 9.007e15): a window's end could equal its start.
 */
export const MAX_EVENT_TIME = 8.64e15;

const outOfRange = (t: number): string => `is ${t}, outside the dates epoch milliseconds can name (±${MAX_EVENT_TIME}, years −271821 to 275760)`;

/** A record's event time, or the reason it has none (phrased to follow "timestamp field \"ts\" "). */
export function eventTimeOf(v: JsonValue | undefined): number | string {
  if (v === undefined) return "is missing";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return `is ${v}, not a finite number of epoch milliseconds`;
    if (Math.abs(v) > MAX_EVENT_TIME) return outOfRange(v);
    return Math.floor(v);
  }
  if (typeof v === "string") {
    if (/^-?\d{1,16}$/.test(v)) {
      const t = Number(v);
      return Math.abs(t) > MAX_EVENT_TIME ? outOfRange(t) : t;
    }
    const t = parseIsoTimestamp(v.trim());
    return t === undefined ? `is ${JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}…` : v)}, neither epoch milliseconds nor an ISO-8601 date-time` : t;
  }
  return `is ${v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : typeof v}, not epoch milliseconds or an ISO-8601 string`;
}
