// Queryable state: one key's state and registered timers at one node, read out of a LocalJob
// snapshot (LocalJob.snapshot(), the same bytes a checkpoint stores), so it needs nothing of the
// engine's live structures. Pure; the runner asks the subtask that owns the key's key group.
import type { JsonValue, Key } from "../core/api";
import { decodeSnapshot } from "../core/snapshot-codec";
import { tablesFromSnapshot, type ColumnarTableSnapshot, type PackedTableSnapshot, type StateKind, type TableSnapshot } from "../core/state";
import type { ImpliedTimers } from "../core/spec";
import { timersFromSnapshot, type TimersSnapshot } from "../core/timers";

export interface KeyStateEntry {
  /** The state's name as the operator declared it (e.g. "velocity", a window's slices). */
  name: string;
  kind: StateKind;
  /** value: the value; list: its elements; map: an object of its entries. TTL'd entries unwrapped. */
  value: JsonValue;
  /** TTL'd state: the event time of the entry's last access (it expires at stamp + ttl). */
  ttlStamp?: number;
}

export interface KeyTimer {
  /** Event time (or processing time) the timer fires at, ms since the epoch. */
  time: number;
  /** The operator's name for the timer (e.g. "expiry", "release"). */
  namespace: string;
}

export interface KeyStateView {
  nodeId: string;
  key: Key;
  state: KeyStateEntry[];
  timers: { eventTime: KeyTimer[]; processingTime: KeyTimer[] };
  /** The node's current watermark, for reading the event-time timers against. */
  watermark: number;
}

interface JobSnapshotView {
  nodes?: Record<string, Uint8Array>;
}
interface OperatorSnapshotView {
  watermark?: number;
  state?: Array<TableSnapshot | ColumnarTableSnapshot | PackedTableSnapshot>;
  eventTimers?: TimersSnapshot;
  processingTimers?: TimersSnapshot;
}

/** TTL'd entries are stored as { v, t } (core/state/handles.ts, Flink's TtlValue). */
function unwrap(stored: unknown): { value: JsonValue; stamp?: number } {
  if (stored !== null && typeof stored === "object" && !Array.isArray(stored)) {
    const o = stored as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 2 && "v" in o && typeof o.t === "number") return { value: o.v as JsonValue, stamp: o.t };
  }
  return { value: stored as JsonValue };
}

function entryOf(table: TableSnapshot, stored: unknown): KeyStateEntry {
  if (table.kind === "map" && Array.isArray(stored)) {
    const obj: Record<string, JsonValue> = {};
    for (const pair of stored as Array<[string, unknown]>) obj[String(pair[0])] = unwrap(pair[1]).value;
    return { name: table.name, kind: table.kind, value: obj };
  }
  if (table.kind === "list" && Array.isArray(stored)) return { name: table.name, kind: table.kind, value: stored.map((x) => unwrap(x).value) };
  const { value, stamp } = unwrap(stored);
  return stamp === undefined ? { name: table.name, kind: table.kind, value } : { name: table.name, kind: table.kind, value, ttlStamp: stamp };
}

/**
 * `key`'s state and timers at node `nodeId` in a job snapshot; undefined when the snapshot has no
 * operator snapshot for the node (one another task runs). A view with no state and no timers means
 * the key holds nothing there (or the node is stateless). `implied`: the node's timers that a heap
 * snapshot leaves implied in its state (OperatorSpec.impliedTimers), listed with the others.
 */
export function queryKeyState(jobSnapshot: Uint8Array, nodeId: string, key: Key, implied?: ImpliedTimers): KeyStateView | undefined {
  const job = decodeSnapshot(jobSnapshot) as JobSnapshotView | null;
  const bytes = job?.nodes?.[nodeId];
  if (!bytes) return undefined;
  const op = decodeSnapshot(bytes) as OperatorSnapshotView | null;
  const state: KeyStateEntry[] = [];
  const impliedTimers: Array<[number, string]> = [];
  for (const table of tablesFromSnapshot(op?.state ?? [])) {
    for (const [k, stored] of table.entries) {
      if (k !== key) continue;
      state.push(entryOf(table, stored));
      if (table.name === implied?.state) impliedTimers.push(...implied.of(key, stored));
    }
  }
  const timers = (list: TimersSnapshot | undefined, more: Array<[number, string]> = []): KeyTimer[] => {
    const listed = timersFromSnapshot(list ?? []).filter((t) => t[2] === key).map(([time, namespace]): [number, string] => [time, namespace]);
    // A snapshot from before timers were left implied lists them too: each timer once.
    const unique = new Map([...listed, ...more].map(([time, namespace]) => [`${time}|${namespace}`, { time, namespace }]));
    return [...unique.values()].sort((a, b) => a.time - b.time || (a.namespace < b.namespace ? -1 : 1));
  };
  return { nodeId, key, state, timers: { eventTime: timers(op?.eventTimers, impliedTimers), processingTime: timers(op?.processingTimers) }, watermark: op?.watermark ?? Number.NEGATIVE_INFINITY };
}
