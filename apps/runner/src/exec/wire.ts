// What the tasks of a parallel job send each other, and how it is encoded.
//
// A data buffer is a flat array of elements (no object per element, cheap to copy between threads):
//   source task → keyed subtask:  REC route value timestamp | WM route watermark | IDLE route 0|1
//   keyed subtask → sink task:    SINK_JSON sinkIndex JSON.stringify(value) timestamp key|null | DEAD deadLetter
//   source task → sink task (no thread crossed): SINK sinkIndex value timestamp key|null
// On a MessagePort: `{ d, n }` a data buffer of n records, `{ b, o? }` barrier b (with its options), `{ e: 1 }` end of
// input, and back from the receiver `{ c }`: c credits (buffers processed).
import type { MessagePort } from "node:worker_threads";
import { Packr } from "msgpackr";
import type { BarrierOptions, ChannelItem } from "./channel";

export const REC = 0;
export const WM = 1;
export const IDLE = 2;
export const SINK = 3;
export const DEAD = 4;
/**
 * A sink value as its JSON text: a subtask serializes what both sinks would serialize anyway, and
 * the sink task, whose thread sets a parallel job's rate, neither clones an object graph across
 * threads nor stringifies it.
 */
export const SINK_JSON = 5;

/** How a buffer crosses a thread boundary: structured clone of the element array, or MessagePack bytes (transferred). */
export type CodecName = "clone" | "msgpack";
export type Payload = unknown[] | Uint8Array;

export interface Codec {
  encode(elements: unknown[]): Payload;
  decode(payload: Payload): unknown[];
}

const packr = new Packr({ useRecords: false, moreTypes: false });

export function codec(name: CodecName): Codec {
  if (name === "msgpack") {
    return {
      encode: (els) => {
        const b = packr.pack(els);
        // A copy that owns its ArrayBuffer, so it can be transferred instead of cloned.
        return new Uint8Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
      },
      decode: (p) => packr.unpack(p as Uint8Array) as unknown[],
    };
  }
  return { encode: (els) => els, decode: (p) => p as unknown[] };
}

export type WireMessage = { d: Payload; n: number } | { b: number; o?: BarrierOptions } | { e: 1 };

/** Puts a channel item on a port (transferring MessagePack bytes). */
export function postItem(port: MessagePort, item: ChannelItem<Payload>): void {
  if (item.kind === "data") {
    const p = item.payload;
    if (p instanceof Uint8Array) port.postMessage({ d: p, n: item.records }, [p.buffer as ArrayBuffer]);
    else port.postMessage({ d: p, n: item.records });
  } else if (item.kind === "barrier") port.postMessage(item.options ? { b: item.id, o: item.options } : { b: item.id });
  else port.postMessage({ e: 1 });
}

export function toItem(m: WireMessage): ChannelItem<Payload> {
  if ("d" in m) return { kind: "data", payload: m.d, records: m.n };
  if ("b" in m) return m.o ? { kind: "barrier", id: m.b, options: m.o } : { kind: "barrier", id: m.b };
  return { kind: "end" };
}

/**
 * Collects elements into buffers of at most `maxRecords` records. Consecutive watermarks of one
 * route with no record between them collapse into the last (what a subtask does with watermarks
 * 5, 6, 7 in a row is what it does with 7: timers fire in time order either way), so a subtask
 * that gets none of a stretch of records gets one watermark for it, not one per record.
 */
export class OutputBuffer {
  private current: unknown[] = [];
  private records = 0;
  private readonly full: Array<{ elements: unknown[]; records: number }> = [];
  /** Index in `current` of the last element when it is a watermark; -1 otherwise. */
  private lastWatermark = -1;

  constructor(private readonly maxRecords: number) {}

  record(...els: unknown[]): void {
    for (const e of els) this.current.push(e);
    this.lastWatermark = -1;
    if (++this.records >= this.maxRecords) this.cut();
  }

  /** A watermark of `route`: in order with the records. */
  watermark(route: number, watermark: number): void {
    const at = this.lastWatermark;
    if (at >= 0 && this.current[at + 1] === route) {
      this.current[at + 2] = watermark;
      return;
    }
    this.lastWatermark = this.current.length;
    this.current.push(WM, route, watermark);
  }

  /** An idleness change: no record, but in order with them. */
  control(...els: unknown[]): void {
    for (const e of els) this.current.push(e);
    this.lastWatermark = -1;
  }

  get isEmpty(): boolean {
    return this.current.length === 0 && this.full.length === 0;
  }

  /** Every buffer so far, the last one possibly partial (a flush). */
  take(): Array<{ elements: unknown[]; records: number }> {
    if (this.current.length > 0) this.cut();
    return this.full.splice(0);
  }

  private cut(): void {
    this.full.push({ elements: this.current, records: this.records });
    this.current = [];
    this.records = 0;
    this.lastWatermark = -1;
  }
}
