// Undo/redo over immutable snapshots: `past` ← `present` → `future`. Framework-free.
//
// Edits that belong together coalesce into one step: consecutive records with the same `group`
// key within COALESCE_MS (typing in one field, nudging nodes with the arrow keys) replace the
// present instead of pushing it, so one Ctrl+Z undoes the whole word, not each letter.

export interface History<T> {
  readonly past: readonly T[];
  readonly present: T;
  readonly future: readonly T[];
  /** The group of the newest step and when it was last extended. */
  readonly group?: { readonly key: string; readonly at: number };
}

export const HISTORY_LIMIT = 200;
export const COALESCE_MS = 1_000;

export function initHistory<T>(present: T): History<T> {
  return { past: [], present, future: [] };
}

export interface RecordOptions {
  /** Records with the same group within COALESCE_MS of each other make one undo step. */
  group?: string;
  /** The time of the edit (ms); injected so tests need no clock. */
  now: number;
  limit?: number;
}

/** Makes `next` the present. The same object as the present is no edit: history is unchanged. */
export function record<T>(history: History<T>, next: T, opts: RecordOptions): History<T> {
  if (Object.is(next, history.present)) return history;
  const { group, now } = opts;
  if (group !== undefined && history.group?.key === group && now - history.group.at <= COALESCE_MS && history.past.length > 0) {
    return { past: history.past, present: next, future: [], group: { key: group, at: now } };
  }
  const limit = opts.limit ?? HISTORY_LIMIT;
  const past = [...history.past, history.present];
  return {
    past: past.length > limit ? past.slice(past.length - limit) : past,
    present: next,
    future: [],
    ...(group !== undefined ? { group: { key: group, at: now } } : {}),
  };
}

export function undo<T>(history: History<T>): History<T> {
  const previous = history.past[history.past.length - 1];
  if (history.past.length === 0) return history;
  return { past: history.past.slice(0, -1), present: previous as T, future: [history.present, ...history.future] };
}

export function redo<T>(history: History<T>): History<T> {
  if (history.future.length === 0) return history;
  const [next, ...rest] = history.future;
  return { past: [...history.past, history.present], present: next as T, future: rest };
}

/** Replaces the present without an undo step (e.g. the first auto-layout of a loaded document). */
export function replacePresent<T>(history: History<T>, present: T): History<T> {
  return { past: history.past, present, future: history.future };
}
