// The windows' trigger: Flink's EventTimeTrigger with allowed lateness, as three pure rules.
// A window [start, end) FIREs when the watermark reaches its max timestamp end − 1; a record
// that arrives after that but within allowedLateness FIREs it again with the updated result;
// the window is PURGEd once the watermark reaches end − 1 + allowedLateness.

/** Flink's TimeWindow.maxTimestamp(): the last instant inside [start, end). */
export const maxTimestamp = (end: number): number => end - 1;

/** When the window's state is purged and records for it become late. */
export const cleanupTime = (end: number, allowedLatenessMs: number): number => end - 1 + allowedLatenessMs;

/** A window is late, and takes no more records, once the watermark has reached its cleanup time. */
export const isWindowLate = (end: number, allowedLatenessMs: number, watermark: number): boolean => cleanupTime(end, allowedLatenessMs) <= watermark;

/** The window has already fired: an update to it must fire it again at once (a late firing). */
export const hasFired = (end: number, watermark: number): boolean => maxTimestamp(end) <= watermark;

/** Sentinel for "no time" in window state (JSON-safe, unlike -Infinity). */
export const NO_TIME = Number.MIN_SAFE_INTEGER;

/** The one timer namespace of the window operators: each key keeps one timer, at its next firing or purge. */
export const WINDOW_TIMER = "window";
