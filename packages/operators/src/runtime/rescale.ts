// Rescaling: one job snapshot out of the snapshots of several tasks of a parallel job (a source
// task, keyed subtasks that each held a key-group range), for LocalJob.restore with the
// keyGroupRange of a subtask at the new parallelism (or without one, for a single-threaded job).
//
// Keyed state and timers are concatenated (the old subtasks held disjoint key groups; restore keeps
// only the new range's keys); a node's watermark is the minimum over the parts; non-keyed operator
// state (broadcast tables) is taken from the first part that has it (every subtask held the same).
// Counters are summed over the parts marked `primary`, so that, when each old part is primary for
// exactly one new subtask, totals over the new subtasks equal the old totals.
import type { JsonValue, Key } from "../core/api";
import { decodeSnapshot, encodeSnapshot } from "../core/snapshot-codec";
import { tablesFromSnapshot, type ColumnarTableSnapshot, type PackedTableSnapshot, type TableSnapshot } from "../core/state";
import { timersFromSnapshot, type TimersSnapshot, type TimerTuple } from "../core/timers";

const JOB_SNAPSHOT_FORMAT = "keyflow.job-snapshot/v1";
const OPERATOR_SNAPSHOT_FORMAT = "keyflow.operator-snapshot/v1";

export interface SnapshotPart {
  /** A LocalJob snapshot (LocalJob.snapshot()). */
  bytes: Uint8Array;
  /** Its counters count towards the merged snapshot. */
  primary: boolean;
}

/** The fields of host.ts's operator snapshot that merging reads; others are copied from the first part. */
interface OperatorSnapshotView {
  format: string;
  watermark: number;
  channelWatermarks: number[];
  channelIdle: boolean[];
  processingTime: number;
  state: Array<TableSnapshot | ColumnarTableSnapshot | PackedTableSnapshot>;
  eventTimers: TimersSnapshot;
  processingTimers: TimersSnapshot;
  operator: JsonValue | null;
  counters: { recordsIn: number; recordsOut: number; late: number };
  [other: string]: unknown;
}

interface JobSnapshotView {
  format: string;
  pipeline: string;
  processingTime: number;
  nodes: Record<string, Uint8Array>;
  sources: Record<string, unknown>;
  idleNodes: string[];
  sinkCounts: Record<string, number>;
  deadLetterCounts: Record<string, number>;
}

/** Merges operator snapshots of one node taken by several subtasks. */
export function mergeOperatorSnapshots(parts: ReadonlyArray<{ bytes: Uint8Array; primary: boolean }>): Uint8Array {
  const first = parts[0];
  if (first === undefined) throw new Error("mergeOperatorSnapshots: no snapshots to merge");
  if (parts.length === 1 && first.primary) return first.bytes;
  const snaps = parts.map((p) => {
    const s = decodeSnapshot(p.bytes) as OperatorSnapshotView;
    if (s === null || typeof s !== "object" || s.format !== OPERATOR_SNAPSHOT_FORMAT) throw new Error(`not an operator snapshot (${OPERATOR_SNAPSHOT_FORMAT})`);
    return { s, primary: p.primary };
  });
  const base = snaps[0]!.s;
  const tables = new Map<string, TableSnapshot>();
  const eventTimers: TimerTuple[] = [];
  const processingTimers: TimerTuple[] = [];
  const counters = { recordsIn: 0, recordsOut: 0, late: 0 };
  let watermark = base.watermark;
  let processingTime = base.processingTime;
  const channelWatermarks = [...base.channelWatermarks];
  const channelIdle = [...base.channelIdle];
  let operator: JsonValue | null = null;
  for (const { s, primary } of snaps) {
    for (const t of tablesFromSnapshot(s.state)) {
      const into = tables.get(t.name);
      if (into === undefined) tables.set(t.name, { name: t.name, kind: t.kind, entries: [...t.entries] });
      else {
        if (into.kind !== t.kind) throw new Error(`state "${t.name}" is ${into.kind} state in one snapshot and ${t.kind} state in another`);
        for (const e of t.entries) into.entries.push(e as [Key, unknown]);
      }
    }
    for (const t of timersFromSnapshot(s.eventTimers)) eventTimers.push(t);
    for (const t of timersFromSnapshot(s.processingTimers)) processingTimers.push(t);
    watermark = Math.min(watermark, s.watermark);
    processingTime = Math.max(processingTime, s.processingTime);
    if (s.channelWatermarks.length === channelWatermarks.length) {
      s.channelWatermarks.forEach((w, i) => (channelWatermarks[i] = Math.min(channelWatermarks[i] as number, w)));
      s.channelIdle.forEach((b, i) => (channelIdle[i] = (channelIdle[i] as boolean) && b));
    }
    if (operator === null && s.operator !== null) operator = s.operator;
    if (primary) {
      counters.recordsIn += s.counters.recordsIn;
      counters.recordsOut += s.counters.recordsOut;
      counters.late += s.counters.late;
    }
  }
  const merged: OperatorSnapshotView = {
    ...base,
    watermark,
    channelWatermarks,
    channelIdle,
    processingTime,
    state: [...tables.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    eventTimers,
    processingTimers,
    operator,
    counters,
  };
  return encodeSnapshot(merged);
}

/**
 * One LocalJob snapshot out of task snapshots: every node's operator snapshots merged (see above),
 * each source's runtime taken from the part that ran it.
 */
export function mergeJobSnapshots(parts: readonly SnapshotPart[]): Uint8Array {
  const first = parts[0];
  if (first === undefined) throw new Error("mergeJobSnapshots: no snapshots to merge");
  if (parts.length === 1 && first.primary) return first.bytes;
  const snaps = parts.map((p) => {
    const s = decodeSnapshot(p.bytes) as JobSnapshotView;
    if (s === null || typeof s !== "object" || s.format !== JOB_SNAPSHOT_FORMAT) throw new Error(`not a job snapshot (${JOB_SNAPSHOT_FORMAT})`);
    return { s, primary: p.primary };
  });
  const byNode = new Map<string, Array<{ bytes: Uint8Array; primary: boolean }>>();
  const merged: JobSnapshotView = {
    format: JOB_SNAPSHOT_FORMAT,
    pipeline: snaps[0]!.s.pipeline,
    processingTime: Math.max(...snaps.map((x) => x.s.processingTime)),
    nodes: {},
    sources: {},
    idleNodes: [],
    sinkCounts: {},
    deadLetterCounts: {},
  };
  const idle = new Set<string>();
  for (const { s, primary } of snaps) {
    for (const [id, bytes] of Object.entries(s.nodes)) {
      let list = byNode.get(id);
      if (!list) byNode.set(id, (list = []));
      list.push({ bytes, primary });
    }
    for (const [id, src] of Object.entries(s.sources)) if (!(id in merged.sources)) merged.sources[id] = src;
    for (const id of s.idleNodes) idle.add(id);
    if (primary) {
      for (const [id, n] of Object.entries(s.sinkCounts)) merged.sinkCounts[id] = (merged.sinkCounts[id] ?? 0) + n;
      for (const [id, n] of Object.entries(s.deadLetterCounts)) merged.deadLetterCounts[id] = (merged.deadLetterCounts[id] ?? 0) + n;
    }
  }
  for (const id of [...byNode.keys()].sort()) merged.nodes[id] = mergeOperatorSnapshots(byNode.get(id)!);
  merged.idleNodes = [...idle].sort();
  return encodeSnapshot(merged);
}
