// How a dead letter is written down, shared by the file and Kafka dead-letter outputs: the reason,
// the node that refused the record, where the record came from, and the original text.
import type { JsonValue } from "@keyflow/operators";
import type { DeadLetter } from "./types";

/** The original record as text; the engine may hand back the bytes it was given. */
export function rawText(raw: string | Uint8Array | undefined): string | undefined {
  if (raw === undefined) return undefined;
  return typeof raw === "string" ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("utf8");
}

/** The original record as bytes (Kafka's dead-letter value); the value as JSON when there is no raw text. */
export function rawBytes(d: DeadLetter): Buffer | null {
  if (d.raw !== undefined) return toBuffer(d.raw);
  if (d.value !== undefined) return Buffer.from(JSON.stringify(d.value), "utf8");
  return null;
}

function toBuffer(raw: string | Uint8Array): Buffer {
  return typeof raw === "string" ? Buffer.from(raw, "utf8") : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
}

/** One line of `<pipeline>.dlq.jsonl`. */
export function deadLetterJson(d: DeadLetter): { [field: string]: JsonValue } {
  const out: { [field: string]: JsonValue } = { node: d.nodeId };
  if (d.port !== undefined) out.port = d.port;
  out.reason = d.reason;
  const o = d.origin;
  if (o) {
    const source: { [field: string]: JsonValue } = { node: o.sourceNodeId };
    if (o.topic !== undefined) source.topic = o.topic;
    source.partition = o.partition;
    if (o.offset !== undefined) source.offset = o.offset;
    if (o.path !== undefined) source.path = o.path;
    if (o.line !== undefined) source.line = o.line;
    out.source = source;
  }
  const raw = rawText(d.raw);
  if (raw !== undefined) out.raw = raw;
  if (d.value !== undefined) out.value = d.value;
  return out;
}
