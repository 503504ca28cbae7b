// Changelog checkpoints, restored: one whole job snapshot out of a chain, a snapshot holding every
// table whole followed by snapshots holding only the keyed state changed since the one before
// (LocalJob.snapshotPieces with a changelog; Flink's changelog state backend replays its state
// changelog over the last materialized state the same way).
//
// Everything but the keyed tables (timers, watermarks, operator state, counters, sources) is the
// newest snapshot's: each snapshot of the chain holds it whole. A table is replayed over the chain:
// a whole table replaces what was before, changes overwrite or delete their keys. Each change holds
// the key's whole stored value, so replaying a change twice, or over a state that already had it,
// gives the same state: the first snapshot may be taken at any point before the second's changes
// began (a state written in the background while changes go on being recorded).
import type { Key } from "../core/api";
import { decodeSnapshot, encodeSnapshot, joinPieces, packValues, splitValues, unpackValues } from "../core/snapshot-codec";
import { tablesFromSnapshot, type ColumnarTableSnapshot, type DeltaTableSnapshot, type PackedTableSnapshot, type StateKind, type TableSnapshot } from "../core/state";

const JOB_SNAPSHOT_FORMAT = "keyflow.job-snapshot/v1";
const OPERATOR_SNAPSHOT_FORMAT = "keyflow.operator-snapshot/v1";

type AnyTable = TableSnapshot | ColumnarTableSnapshot | PackedTableSnapshot | DeltaTableSnapshot;

interface OperatorSnapshotView {
  format: string;
  state: AnyTable[];
  [other: string]: unknown;
}

interface JobSnapshotView {
  format: string;
  nodes: Record<string, Uint8Array>;
  [other: string]: unknown;
}

/** A table as the chain builds it: its kind and entries by key, in the order they came. */
interface ReplayedTable {
  kind: StateKind;
  entries: Map<Key, unknown>;
}

/**
 * The whole job snapshot a chain stands for: `chain[0]` a snapshot with every table whole (a
 * changelog's "whole" one, or any plain snapshot), then each "changes" snapshot in the order
 * taken. A chain of one is returned as it is.
 */
export function resolveChangelog(chain: readonly Uint8Array[]): Uint8Array {
  const newestBytes = chain[chain.length - 1];
  if (newestBytes === undefined) throw new Error("resolveChangelog: an empty chain");
  if (chain.length === 1) return newestBytes;
  const jobs = chain.map((bytes, i) => {
    const s = decodeSnapshot(bytes) as JobSnapshotView;
    if (s === null || typeof s !== "object" || s.format !== JOB_SNAPSHOT_FORMAT) throw new Error(`changelog snapshot ${i + 1} of ${chain.length} is not a job snapshot (${JOB_SNAPSHOT_FORMAT})`);
    return s;
  });
  const newest = jobs[jobs.length - 1] as JobSnapshotView;
  const nodes: Record<string, Uint8Array> = {};
  for (const [id, bytes] of Object.entries(newest.nodes)) {
    const parts = jobs.map((j) => j.nodes[id]).filter((b): b is Uint8Array => b !== undefined);
    nodes[id] = parts.length === 1 ? bytes : resolveOperator(id, parts);
  }
  return encodeSnapshot({ ...newest, nodes });
}

/** One node's snapshot out of its snapshots along the chain (oldest first). */
function resolveOperator(nodeId: string, chain: readonly Uint8Array[]): Uint8Array {
  const snaps = chain.map((bytes) => {
    const s = decodeSnapshot(bytes) as OperatorSnapshotView;
    if (s === null || typeof s !== "object" || s.format !== OPERATOR_SNAPSHOT_FORMAT) throw new Error(`node "${nodeId}": not an operator snapshot (${OPERATOR_SNAPSHOT_FORMAT})`);
    return s;
  });
  // Tables written packed (heap tables with kept columns) are replayed on their values' bytes.
  if (snaps.every((s) => s.state.every((t) => "packed" in t || "ops" in t))) return replayPacked(nodeId, snaps);
  const tables = new Map<string, ReplayedTable>();
  snaps.forEach((s, i) => {
    // Whole tables in order, so that one listing no keys takes those of the whole table before it.
    const whole = tablesFromSnapshot(s.state.filter((t): t is Exclude<AnyTable, DeltaTableSnapshot> => !("ops" in t)));
    let w = 0;
    for (const t of s.state) {
      if (!("ops" in t)) {
        const table = whole[w++] as TableSnapshot;
        tables.set(table.name, { kind: table.kind, entries: new Map(table.entries) });
        continue;
      }
      let into = tables.get(t.name);
      if (into === undefined) tables.set(t.name, (into = { kind: t.kind, entries: new Map() }));
      if (into.kind !== t.kind) throw new Error(`node "${nodeId}": state "${t.name}" is ${into.kind} state in snapshot ${i} of the chain and ${t.kind} state in snapshot ${i + 1}`);
      // The values decoded as a whole table's would be (map state back to [key, value] pairs), applied in log order.
      const keys = unpackValues(t.changedKeys) as Key[];
      const set = keys.filter((_, e) => t.ops[e] === 1);
      const [values] = tablesFromSnapshot([{ name: t.name, kind: t.kind, packedKeys: [packValues(set)], packed: [t.changed] }]);
      const entries = (values as TableSnapshot).entries;
      if (keys.length !== t.ops.length) throw new Error(`node "${nodeId}": state "${t.name}": the changes list ${keys.length} keys for ${t.ops.length} operations`);
      let v = 0;
      keys.forEach((k, e) => {
        if (t.ops[e] === 1) into.entries.set(k, (entries[v++] as [Key, unknown])[1]);
        else into.entries.delete(k);
      });
    }
  });
  // The newest snapshot's tables, in its order (a table is in every snapshot from its first use on).
  const newest = snaps[snaps.length - 1] as OperatorSnapshotView;
  const state: TableSnapshot[] = newest.state.map((t) => {
    const table = tables.get(t.name) as ReplayedTable;
    return { name: t.name, kind: table.kind, entries: [...table.entries] };
  });
  return encodeSnapshot({ ...newest, state });
}

/** A table replayed on bytes: each key's value as packed (PackedTableSnapshot), in the order the keys came. */
interface PackedReplay {
  kind: StateKind;
  values: Map<Key, Uint8Array>;
}

/**
 * resolveOperator for a node whose tables are all packed or changes: values are moved as the
 * bytes they were packed to (splitValues), never decoded, and the tables written packed, one chunk
 * each. Decoding and packing every value again took most of a second per 10 MB of state.
 */
function replayPacked(nodeId: string, snaps: readonly OperatorSnapshotView[]): Uint8Array {
  const tables = new Map<string, PackedReplay>();
  snaps.forEach((s, i) => {
    // A whole table listing no keys has those of the nearest earlier one that lists them.
    let keys: Key[] = [];
    for (const t of s.state) {
      if ("packed" in t) {
        if (t.packedKeys !== null) keys = t.packedKeys.flatMap((c) => unpackValues(c) as Key[]);
        const values = t.packed.flatMap((c) => splitValues(c));
        if (values.length !== keys.length) throw new Error(`node "${nodeId}": state "${t.name}" in snapshot ${i + 1} of the chain lists ${keys.length} keys for ${values.length} values`);
        const byKey = new Map<Key, Uint8Array>();
        keys.forEach((k, j) => byKey.set(k, values[j] as Uint8Array));
        tables.set(t.name, { kind: t.kind, values: byKey });
        continue;
      }
      if (!("ops" in t)) throw new Error(`node "${nodeId}": state "${t.name}" is neither packed nor changes`);
      let into = tables.get(t.name);
      if (into === undefined) tables.set(t.name, (into = { kind: t.kind, values: new Map() }));
      if (into.kind !== t.kind) throw new Error(`node "${nodeId}": state "${t.name}" is ${into.kind} state in snapshot ${i} of the chain and ${t.kind} state in snapshot ${i + 1}`);
      const changedKeys = unpackValues(t.changedKeys) as Key[];
      if (changedKeys.length !== t.ops.length) throw new Error(`node "${nodeId}": state "${t.name}": the changes list ${changedKeys.length} keys for ${t.ops.length} operations`);
      const changed = splitValues(t.changed);
      let v = 0;
      changedKeys.forEach((k, e) => {
        if (t.ops[e] !== 1) into.values.delete(k);
        else if (v < changed.length) into.values.set(k, changed[v++] as Uint8Array);
        else throw new Error(`node "${nodeId}": state "${t.name}": the changes hold ${changed.length} values for more operations that set one`);
      });
      if (v !== changed.length) throw new Error(`node "${nodeId}": state "${t.name}": the changes hold ${changed.length} values for ${v} operations that set one`);
    }
  });
  const newest = snaps[snaps.length - 1] as OperatorSnapshotView;
  const state: PackedTableSnapshot[] = newest.state.map((t) => {
    const table = tables.get(t.name) as PackedReplay;
    const pieces = [...table.values.values()];
    const packed = joinPieces({ pieces, byteLength: pieces.reduce((n, b) => n + b.byteLength, 0) });
    return { name: t.name, kind: table.kind, packedKeys: [packValues([...table.values.keys()])], packed: [packed] };
  });
  return encodeSnapshot({ ...newest, state });
}
