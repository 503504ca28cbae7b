import { describe, expect, it } from "vitest";
import { KafkaJSNonRetriableError, KafkaJSProtocolError } from "kafkajs";
import { chunks, fencedErrorType } from "./writer";

describe("chunks", () => {
  it("splits a write into requests under the byte limit, in order, never leaving a message out", () => {
    const messages = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: "x".repeat(100 + i) }));
    const parts = chunks(messages, 1_000);
    expect(parts.flat()).toEqual(messages);
    for (const p of parts) expect(p.reduce((n, m) => n + String(m.value).length + String(m.key).length + 64, 0)).toBeLessThanOrEqual(1_000);
    // A message larger than the limit still goes, alone.
    expect(chunks([{ value: "y".repeat(5_000) }, { value: "z" }], 1_000).map((p) => p.length)).toEqual([1, 1]);
    expect(chunks([], 1_000)).toEqual([]);
  });
});

describe("fencedErrorType", () => {
  it("finds the broker's fencing answer in kafkajs errors and the errors they wrap, and nothing else", () => {
    // kafkajs's own error classes, as its producer throws them.
    const epoch = new KafkaJSProtocolError("Producer attempted an operation with an old epoch");
    Object.assign(epoch, { type: "INVALID_PRODUCER_EPOCH", code: 47 });
    expect(fencedErrorType(epoch)).toBe("INVALID_PRODUCER_EPOCH");
    expect(fencedErrorType(Object.assign(new KafkaJSNonRetriableError("send failed"), { cause: epoch }))).toBe("INVALID_PRODUCER_EPOCH");
    // PRODUCER_FENCED (code 90) is newer than kafkajs 2.2's error table.
    expect(fencedErrorType(Object.assign(new Error("unknown"), { type: "KAFKA_UNKNOWN_ERROR", code: 90 }))).toBe("PRODUCER_FENCED");
    expect(fencedErrorType(Object.assign(new Error("timeout"), { type: "REQUEST_TIMED_OUT", code: 7 }))).toBeUndefined();
    expect(fencedErrorType(new Error("connection closed"))).toBeUndefined();
    expect(fencedErrorType(undefined)).toBeUndefined();
  });
});
