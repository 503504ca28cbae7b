import { describe, expect, it } from "vitest";
import { KafkaJSNonRetriableError, KafkaJSProtocolError } from "kafkajs";
import { fencedErrorType, requestLength } from "./writer";

describe("requestLength", () => {
  it("fills a request up to the byte limit, never with nothing, and leaves the rest for the next", () => {
    const sizes = Array.from({ length: 50 }, (_, i) => 164 + i);
    let rest = sizes;
    const requests: number[][] = [];
    while (rest.length > 0) {
      const n = requestLength(rest, 1_000);
      requests.push(rest.slice(0, n));
      rest = rest.slice(n);
    }
    expect(requests.flat()).toEqual(sizes);
    for (const r of requests) expect(r.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1_000);
    // Full: the next size would not have fitted.
    for (let i = 0; i + 1 < requests.length; i++) expect(requests[i]!.reduce((a, b) => a + b, 0) + requests[i + 1]![0]!).toBeGreaterThan(1_000);
    // A message larger than the limit still goes, alone.
    expect(requestLength([5_000, 1], 1_000)).toBe(1);
    expect(requestLength([1, 5_000], 1_000)).toBe(1);
    expect(requestLength([], 1_000)).toBe(0);
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
