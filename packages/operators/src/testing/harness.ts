// OperatorTestHarness: drives one operator with virtual time and records its whole ordered
// output, as Flink's KeyedOneInputStreamOperatorTestHarness (processElement, processWatermark,
// setProcessingTime, snapshot, restore into a new instance, continue).
import type { JsonObject, Key } from "../core/api";
import { MAX_WATERMARK } from "../core/api";
import { OperatorHost, type StateStats } from "../core/host";
import type { OperatorSpec } from "../core/spec";
import type { KeyGroupRange } from "../core/keys";
import type { KeyedStateBackend } from "../core/state";
import type { z } from "zod";

export interface HarnessOutput {
  port: string;
  value: JsonObject;
  timestamp: number;
  key?: Key;
}

export interface HarnessOptions {
  /** Whether the input is keyed: processElement then requires a key unless the spec selects its own. */
  keyed?: boolean;
  /** Ports with a downstream edge, as the operator is told; default: all of the spec's outputs. */
  connectedOutputs?: string[];
  /** Initial injected processing time; default -infinity (nothing has happened yet). */
  processingTime?: number;
  nodeId?: string;
  /** The keyed state backend (default: the heap backend); e.g. a serializing one to run an operator's generic storage. */
  backend?: () => KeyedStateBackend;
  /** The key groups this subtask owns (default: all); records keyed outside it are skipped, as in a parallel job. */
  keyGroupRange?: KeyGroupRange;
}

export class OperatorTestHarness<P extends z.ZodType = z.ZodType> {
  private readonly out: HarnessOutput[] = [];
  readonly host: OperatorHost;

  private constructor(
    readonly spec: OperatorSpec<P>,
    readonly params: z.input<P>,
    readonly opts: HarnessOptions,
    restoreFrom?: Uint8Array,
  ) {
    const nodeId = opts.nodeId ?? "op";
    const parsed = spec.params.safeParse(params);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(params)"}: ${i.message}`).join("; ");
      throw new Error(`node "${nodeId}" (${spec.type}): invalid params: ${issues}`);
    }
    this.host = new OperatorHost({
      nodeId,
      spec: spec as unknown as OperatorSpec,
      params: parsed.data,
      emit: (port, value, timestamp, key) => {
        this.out.push(key === undefined ? { port, value, timestamp } : { port, value, timestamp, key });
      },
      ...(opts.connectedOutputs ? { connectedOutputs: opts.connectedOutputs } : {}),
      ...(opts.processingTime !== undefined ? { processingTime: opts.processingTime } : {}),
      ...(restoreFrom ? { restoreFrom } : {}),
      ...(opts.backend ? { backend: opts.backend() } : {}),
      ...(opts.keyGroupRange ? { keyGroupRange: opts.keyGroupRange } : {}),
    });
  }

  static forSpec<P extends z.ZodType>(spec: OperatorSpec<P>, params: z.input<P>, opts: HarnessOptions = {}): OperatorTestHarness<P> {
    return new OperatorTestHarness(spec, params, opts);
  }

  /** A new harness whose operator continues from `bytes` (taken by snapshot()). */
  static restore<P extends z.ZodType>(spec: OperatorSpec<P>, params: z.input<P>, bytes: Uint8Array, opts: HarnessOptions = {}): OperatorTestHarness<P> {
    return new OperatorTestHarness(spec, params, opts, bytes);
  }

  processElement(value: JsonObject, timestamp: number, key?: Key, inputPort = "in"): this {
    if (this.opts.keyed && key === undefined && !this.spec.keySelector && inputPort === "in") {
      throw new Error(`harness for ${this.spec.type} is keyed: processElement needs a key`);
    }
    this.host.processElement(key === undefined ? { value, timestamp } : { value, timestamp, key }, inputPort);
    return this;
  }

  /** Fires the event-time timers <= wm in time order, then onWatermark. */
  processWatermark(wm: number): this {
    this.host.processWatermark(wm);
    return this;
  }

  /** Fires the processing-time timers <= t. */
  setProcessingTime(t: number): this {
    this.host.setProcessingTime(t);
    return this;
  }

  /** The watermark becomes +infinity: every window and event-time timer fires. */
  endOfInput(): this {
    this.host.processWatermark(MAX_WATERMARK);
    return this;
  }

  /** The whole ordered output so far, side outputs included. */
  output(): HarnessOutput[] {
    return [...this.out];
  }

  /** The output of one port. */
  outputOf(port: string): HarnessOutput[] {
    return this.out.filter((o) => o.port === port);
  }

  /** Returns the output so far and clears it. */
  takeOutput(): HarnessOutput[] {
    return this.out.splice(0, this.out.length);
  }

  snapshot(): Uint8Array {
    return this.host.snapshot();
  }

  stateStats(): StateStats {
    return this.host.stateStats();
  }

  watermark(): number {
    return this.host.watermark;
  }
}
