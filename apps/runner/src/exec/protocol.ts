// Control messages between the coordinator (main thread) and a keyed subtask (worker thread), on
// the worker's parentPort. Data and barriers travel on the channels' own MessagePorts (./wire).
import type { KeyGroupRange, KeyStateView, NodeMetrics, PipelineDocument, SnapshotPart } from "@keyflow/operators";
import type { MessagePort } from "node:worker_threads";
import type { TaskTimes } from "./channel";
import type { CodecName } from "./wire";
import type { DiskChain } from "../state/chain-files";
import type { DiskMetaView } from "../state/disk-checkpoints";

export interface SubtaskInit {
  doc: PipelineDocument;
  subtask: number;
  parallelism: number;
  keyGroupRange: KeyGroupRange;
  headNodes: string[];
  routes: Array<{ to: string; port: string; channel: number }>;
  sinkNodes: string[];
  /** Task snapshots to restore this subtask's key groups from (merged), if any. */
  restore: SnapshotPart[] | undefined;
  processingTime: number;
  /** Records per buffer and buffers (credits) per channel. */
  bufferRecords: number;
  buffersPerChannel: number;
  codec: CodecName;
  /** Input from the source task, output to the sink task. */
  input: MessagePort;
  output: MessagePort;
  metricsIntervalMs: number;
  /** When barriers are due: the subtask packs its changed state in a window before each (../job/materialize.ts). */
  checkpointIntervalMs: number;
  /** The tests' check of heap snapshots' kept columns (@keyflow/operators' keptColumnsVerification), on in the runner's thread. */
  verifySnapshots: boolean;
  /** settings.stateBackend "disk": this subtask's store folder, where its chain files go, what to replay. */
  disk?: { dir: string; sharedDir: string | undefined; suffix: string; restored: { meta: DiskMetaView; dir: string } | undefined; maxParallelism: number };
}

export interface SubtaskReport {
  nodes: Record<string, NodeMetrics>;
  times: TaskTimes;
  /** Cumulative ms busy / backpressured / idle since the subtask started. */
  totals: { busy: number; backPressured: number; idle: number };
  /** Records sent on the output channel and not yet consumed downstream. */
  queuedRecords: number;
  maxQueuedRecords: number;
  /** Records received and not yet processed. */
  inputQueuedRecords: number;
  recordsIn: number;
  recordsOut: number;
}

export type FromSubtask =
  | { type: "ready" }
  | { type: "ack"; id: number; state: Uint8Array; alignmentMs: number; syncMs: number; disk?: DiskChain }
  /**
   * The heap state changed since the subtask's last changelog snapshot, taken ahead of its next
   * barrier (../job/materialize.ts, ChangesAheadSchedule): a link of the chain of the first
   * checkpoint after `after` (the last barrier it aligned) that it acknowledges.
   */
  | { type: "changes"; after: number; state: Uint8Array }
  | { type: "metrics"; report: SubtaskReport }
  | { type: "finished"; report: SubtaskReport }
  | { type: "error"; message: string }
  /** The answer to a state query: the key's state and timers at the node, null when the subtask has no such node. */
  | { type: "state"; id: number; view: KeyStateView | null };

export type ToSubtask =
  | { type: "time"; now: number }
  | { type: "abort"; id: number }
  /** Queryable state: one key's state and timers at one node (the subtask owns the key's key group). */
  | { type: "state"; id: number; nodeId: string; key: string };
