// A job snapshot's content, whatever form its tables were written in (packed or columnar: the heap
// backend writes tables its operator keeps in its own layout in columnar form, the disk backend
// packs every table), for tests that compare the state two backends hold.
import { decodeSnapshot } from "../core/snapshot-codec";
import { tablesFromSnapshot, type ColumnarTableSnapshot, type PackedTableSnapshot, type TableSnapshot } from "../core/state";

type StateColumn = TableSnapshot | ColumnarTableSnapshot | PackedTableSnapshot;

/** The job snapshot decoded, each operator's snapshot decoded too, its tables as [key, value] pairs. */
export function canonicalJobSnapshot(bytes: Uint8Array): unknown {
  const job = decodeSnapshot(bytes) as { nodes: Record<string, Uint8Array> } & Record<string, unknown>;
  const nodes: Record<string, unknown> = {};
  for (const [id, b] of Object.entries(job.nodes)) {
    const op = decodeSnapshot(b) as { state?: StateColumn[] } & Record<string, unknown>;
    nodes[id] = op.state === undefined ? op : { ...op, state: tablesFromSnapshot(op.state) };
  }
  return { ...job, nodes };
}
