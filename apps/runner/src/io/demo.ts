// source.demo: paces the engine's pure payment generator (generateDemoPayment) at eventsPerSecond
// of processing time. The runner's clock, not the engine, supplies each payment's timestamp; the
// position is the index of the next payment, so a restored demo continues the same sequence.
import { z } from "zod";
import { generateDemoPayment, type JsonValue, type SourceDemoParams } from "@keyflow/operators";
import type { Clock } from "../job/clock";
import type { EmitBatch, RecordSource, SourceRecord } from "./types";

const positionSchema = z.object({ index: z.number().int().nonnegative() });

export interface DemoSourceOptions {
  nodeId: string;
  params: SourceDemoParams;
  clock: Clock;
  /** Milliseconds between batches. */
  tickMs?: number;
  /** Stops after this many payments (tests); unset: runs until stopped. */
  limit?: number;
}

export class DemoSource implements RecordSource {
  readonly nodeId: string;
  readonly idleTimeoutMs = undefined;
  readonly bounded: boolean;
  private index = 0;

  constructor(private readonly opts: DemoSourceOptions) {
    this.nodeId = opts.nodeId;
    this.bounded = opts.limit !== undefined;
  }

  async open(restored: JsonValue | undefined): Promise<JsonValue> {
    if (restored !== undefined) {
      const parsed = positionSchema.safeParse(restored);
      if (!parsed.success) throw new Error(`node "${this.nodeId}": the checkpoint's demo position is not understood: ${JSON.stringify(restored)}`);
      this.index = parsed.data.index;
    }
    return { index: this.index };
  }

  async run(emit: EmitBatch, signal: AbortSignal): Promise<void> {
    const { params, clock, limit } = this.opts;
    const tickMs = this.opts.tickMs ?? 50;
    const opts = { cardCount: params.cardCount, fraudRate: params.fraudRate };
    let last = clock.now();
    let owed = 0; // fractional payments carried between ticks
    while (!signal.aborted && (limit === undefined || this.index < limit)) {
      await sleep(tickMs, signal);
      if (signal.aborted) return;
      const now = clock.now();
      owed += ((now - last) * params.eventsPerSecond) / 1000;
      let count = Math.floor(owed);
      owed -= count;
      if (limit !== undefined) count = Math.min(count, limit - this.index);
      const records: SourceRecord[] = [];
      for (let i = 0; i < count; i++) {
        // Spread the tick's payments over its interval, in order.
        const ts = Math.round(last + ((i + 1) * (now - last)) / count);
        const index = this.index++;
        records.push({ kind: "value", value: generateDemoPayment(params.seed, index, ts, opts), origin: { partition: 0, offset: String(index) } });
      }
      last = now;
      if (records.length > 0) await emit({ records, position: { index: this.index } });
    }
  }

  async close(): Promise<void> {}
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
