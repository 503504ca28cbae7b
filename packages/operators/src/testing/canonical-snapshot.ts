// A job snapshot's content, whatever form its tables were written in (packed or columnar: the heap
// backend writes tables its operator keeps in its own layout in columnar form, the disk backend
// packs every table; timers packed in ranges or listed), for tests that compare the state two backends hold.
import { bytesEqual, decodeSnapshot, packValues, unpackValues } from "../core/snapshot-codec";
import { tablesFromSnapshot, type ColumnarTableSnapshot, type PackedTableSnapshot, type TableSnapshot } from "../core/state";
import { timersFromSnapshot, type TimersSnapshot } from "../core/timers";

type StateColumn = TableSnapshot | ColumnarTableSnapshot | PackedTableSnapshot;

/** The job snapshot decoded, each operator's snapshot decoded too, its tables as [key, value] pairs and its timers as lists. */
export function canonicalJobSnapshot(bytes: Uint8Array): unknown {
  const job = decodeSnapshot(bytes) as { nodes: Record<string, Uint8Array> } & Record<string, unknown>;
  const nodes: Record<string, unknown> = {};
  for (const [id, b] of Object.entries(job.nodes)) {
    const op = decodeSnapshot(b) as { state?: StateColumn[]; eventTimers?: TimersSnapshot; processingTimers?: TimersSnapshot } & Record<string, unknown>;
    if (op.state === undefined) {
      nodes[id] = op;
      continue;
    }
    nodes[id] = {
      ...op,
      state: tablesFromSnapshot(op.state),
      eventTimers: timersFromSnapshot(op.eventTimers ?? []),
      processingTimers: timersFromSnapshot(op.processingTimers ?? []),
    };
  }
  return { ...job, nodes };
}

/**
 * An operator snapshot's packed value chunks (those of the tables named `table`, or all), each
 * with whether its bytes are msgpackr's packing of its decoded values: tables written straight
 * from their columns (ValueWriter) must give exactly those bytes.
 */
export function packedChunks(bytes: Uint8Array, table?: string): Array<{ table: string; repackedAlike: boolean }> {
  const op = decodeSnapshot(bytes) as { state?: Array<{ name: string; packed?: Uint8Array[] }> };
  const out: Array<{ table: string; repackedAlike: boolean }> = [];
  for (const t of op.state ?? []) {
    if (table !== undefined && t.name !== table) continue;
    for (const chunk of t.packed ?? []) out.push({ table: t.name, repackedAlike: bytesEqual(chunk, packValues(unpackValues(chunk))) });
  }
  return out;
}
