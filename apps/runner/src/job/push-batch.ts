// One source batch into the LocalJob that parses it: shared by the single-threaded driver and the
// parallel source task, which differ only in whose job and activity table they hand in.
import type { LocalJob } from "@keyflow/operators";
import type { SourceBatch } from "../io/types";

/** When each partition last delivered a record, and which ones are idle (sources with idleTimeoutMs). */
export interface PartitionActivity {
  lastRecordAt: Map<number, number>;
  idle: Set<number>;
}

export function pushSourceBatch(job: LocalJob, nodeId: string, batch: SourceBatch, act: PartitionActivity | undefined, now: number): void {
  for (const r of batch.records) {
    if (r.kind === "raw") job.pushRaw(nodeId, r.raw, r.origin);
    else job.pushValue(nodeId, r.value, r.origin);
    if (act) {
      act.lastRecordAt.set(r.origin.partition, now);
      act.idle.delete(r.origin.partition);
    }
  }
  for (const p of batch.idlePartitions ?? []) job.markPartitionIdle(nodeId, p);
}
