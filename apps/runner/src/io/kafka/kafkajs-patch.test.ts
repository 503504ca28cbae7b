// patches/kafkajs+2.2.4.patch rewrites kafkajs's record encoding and decoding for speed (patch-package
// applies it at install). These properties pin that the bytes mean what they meant: varints and records
// against a BigInt reference, and whole produce requests decoded back to what was sent, CRC checked.
import { createRequire } from "node:module";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

const require = createRequire(import.meta.url);

interface KjsEncoder {
  writeVarInt(v: number): KjsEncoder;
  writeVarLong(v: number | string): KjsEncoder;
  readonly buffer: Buffer;
}
interface KjsEncoderClass {
  new (initialSize?: number): KjsEncoder;
  sizeOfVarInt(v: number): number;
  sizeOfVarLong(v: number | string): number;
}
interface KjsDecoder {
  readString(): string;
  readInt16(): number;
  readInt32(): number;
  readInt64(): { toString(): string };
  readArray<T>(f: (d: KjsDecoder) => T): T[];
  slice(n: number): KjsDecoder;
  forward(n: number): void;
  readonly buffer: Buffer;
  offset: number;
}
type KjsHeaders = Record<string, string | Buffer | Array<string | Buffer>>;
interface KjsMessage {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  timestamp?: string;
  headers?: KjsHeaders;
  partition?: number;
}
interface DecodedRecord {
  key: Buffer | null;
  value: Buffer | null;
  timestamp: string;
  offset: string;
  headers: Record<string, Buffer | Buffer[]>;
}

const Encoder = require("kafkajs/src/protocol/encoder") as KjsEncoderClass;
const Decoder = require("kafkajs/src/protocol/decoder") as new (b: Buffer) => KjsDecoder;
const produceV3 = require("kafkajs/src/protocol/requests/produce/v3/request") as (o: {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  topicData: Array<{ topic: string; partitions: Array<{ partition: number; firstSequence: number; messages: KjsMessage[] }> }>;
}) => { encode(): Promise<{ buffer: Buffer }> };
const decodeRecordBatch = require("kafkajs/src/protocol/recordBatch/v0/decoder") as (d: KjsDecoder) => Promise<{ records: DecodedRecord[]; firstTimestamp: string; maxTimestamp: string }>;
const decodeRecord = require("kafkajs/src/protocol/recordBatch/record/v0/decoder") as (d: KjsDecoder, batch: { firstOffset: string; firstTimestamp: string; timestampType: number }) => DecodedRecord;
const crc32C = require("kafkajs/src/protocol/recordBatch/crc32C") as (b: Buffer) => number;
const groupMessagesPerPartition = require("kafkajs/src/producer/groupMessagesPerPartition") as (o: {
  topic: string;
  partitionMetadata: unknown[];
  messages: KjsMessage[];
  partitioner: (o: { message: KjsMessage }) => number;
}) => Record<string, KjsMessage[]>;

/** Kafka's unsigned LEB128 varint of `z` (already zigzagged). */
function uvarint(z: bigint): number[] {
  const out: number[] = [];
  for (; z >= 0x80n; z >>= 7n) out.push(Number(z & 0x7fn) | 0x80);
  out.push(Number(z));
  return out;
}
/** A produce request's partition entry: its number and its record set (size-prefixed). */
function readPartition(p: KjsDecoder): { partition: number; set: KjsDecoder } {
  const partition = p.readInt32();
  const size = p.readInt32();
  const set = p.slice(size);
  p.forward(size);
  return { partition, set };
}
const zigzag64 = (v: bigint): bigint => BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
const zigzag32 = (v: number): bigint => BigInt(((v << 1) ^ (v >> 31)) >>> 0);

describe("kafkajs patch: varints", () => {
  it("is applied (a fresh install ran patch-package)", () => {
    // The linear grouping is the patch's; the original copies an array per message.
    expect(groupMessagesPerPartition.toString()).toContain("Keyflow patch");
  });

  const int32 = fc.oneof(fc.integer(), fc.constantFrom(0, -1, 1, 63, 64, -64, -65, 2 ** 30 - 1, 2 ** 30, -(2 ** 30), -(2 ** 30) - 1, 2 ** 31 - 1, -(2 ** 31)));
  it("writes and sizes varints as Kafka's zigzag LEB128", () => {
    fc.assert(
      fc.property(int32, (v) => {
        const bytes = [...new Encoder().writeVarInt(v).buffer];
        expect(bytes).toEqual(uvarint(zigzag32(v)));
        expect(Encoder.sizeOfVarInt(v)).toBe(bytes.length);
      }),
    );
  });

  const int64 = fc.oneof(int32, fc.maxSafeInteger(), fc.constantFrom(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 31, -(2 ** 31) - 1, 1_796_336_295_149));
  it("writes and sizes varlongs (numbers, small or not, and decimal strings) as Kafka's zigzag LEB128", () => {
    fc.assert(
      fc.property(int64, fc.boolean(), (v, asString) => {
        const input = asString ? String(v) : v;
        const bytes = [...new Encoder().writeVarLong(input).buffer];
        expect(bytes).toEqual(uvarint(zigzag64(BigInt(v))));
        expect(Encoder.sizeOfVarLong(input)).toBe(bytes.length);
      }),
    );
  });
});

describe("kafkajs patch: fetched records", () => {
  const decimal = fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 53n + 10n }), fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }), fc.constantFrom(0n, 1_796_336_295_149n, 2n ** 53n - 1n));
  const delta = fc.oneof(fc.bigInt({ min: -(2n ** 31n), max: 2n ** 31n }), fc.bigInt({ min: -(2n ** 60n), max: 2n ** 60n }), fc.constantFrom(0n, 1n, -1n, 2n ** 27n - 1n, 2n ** 27n, -(2n ** 27n), -(2n ** 27n) - 1n));
  it("gives each record its batch's first timestamp and offset plus its deltas, as decimal strings", () => {
    fc.assert(
      fc.property(decimal, delta, decimal, fc.integer({ min: 0, max: 2 ** 31 - 1 }), (firstTimestamp, timestampDelta, firstOffset, offsetDelta) => {
        // attributes, timestamp delta, offset delta, null key, null value, no headers
        const record = Buffer.from([0, ...uvarint(zigzag64(timestampDelta)), ...uvarint(zigzag32(offsetDelta)), 1, 1, 0]);
        const decoded = decodeRecord(new Decoder(record), { firstOffset: String(firstOffset), firstTimestamp: String(firstTimestamp), timestampType: 0 });
        expect(decoded.timestamp).toBe(BigInt.asIntN(64, firstTimestamp + timestampDelta).toString());
        expect(decoded.offset).toBe(BigInt.asIntN(64, firstOffset + BigInt(offsetDelta)).toString());
        expect(decoded.key).toBeNull();
        expect(decoded.value).toBeNull();
      }),
    );
  });
});

describe("kafkajs patch: produce requests", () => {
  const bytes = fc.oneof(fc.string({ unit: "binary", maxLength: 40 }), fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)));
  const message = fc.record(
    {
      key: fc.option(bytes, { nil: null }),
      value: fc.option(fc.oneof(bytes, fc.string({ unit: "grapheme", minLength: 200, maxLength: 900 })), { nil: null }),
      timestamp: fc.oneof(fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }), fc.integer({ min: 0, max: 2 ** 40 })).map(String),
      headers: fc.dictionary(fc.constantFrom("trace-id", "source", "x"), fc.oneof(bytes, fc.array(bytes, { minLength: 1, maxLength: 3 })), { maxKeys: 3 }),
    },
    { requiredKeys: ["value", "timestamp"] },
  );
  const asBuffer = (v: string | Buffer | null | undefined): Buffer | null => (v === null || v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v));

  it("decodes back, with the CRC right, to each partition's messages in order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(message, { minLength: 1, maxLength: 30 }), { minLength: 1, maxLength: 3 }), fc.option(fc.string({ minLength: 1, maxLength: 12 }), { nil: null }), fc.boolean(), async (generated, transactionalId, untimed) => {
        // Messages without timestamps take the producer's clock.
        const perPartition = untimed ? generated.map((ms) => ms.map(({ timestamp: _, ...m }): KjsMessage => m)) : generated;
        const before = Date.now();
        const topicData = [{ topic: "alerts", partitions: perPartition.map((messages, partition) => ({ partition, firstSequence: 7 * partition, messages })) }];
        const { buffer } = await produceV3({ acks: -1, timeout: 30_000, transactionalId, topicData }).encode();
        const after = Date.now();
        const d = new Decoder(buffer);
        expect(d.readString()).toBe(transactionalId);
        expect(d.readInt16()).toBe(-1);
        expect(d.readInt32()).toBe(30_000);
        const topics = d.readArray((t) => ({ topic: t.readString(), partitions: t.readArray(readPartition) }));
        expect(topics.map((t) => t.topic)).toEqual(["alerts"]);
        const partitions = topics[0]?.partitions ?? [];
        expect(partitions.map((p) => p.partition)).toEqual(perPartition.map((_, i) => i));
        for (const [i, { set }] of partitions.entries()) {
          const sent = perPartition[i] ?? [];
          // FirstOffset (8), Length (4), PartitionLeaderEpoch (4), Magic (1), CRC (4), then what the CRC covers.
          const batch = set.buffer;
          expect(batch.readUInt32BE(17)).toBe(crc32C(batch.subarray(21)));
          const decoded = await decodeRecordBatch(new Decoder(batch));
          const sortedTimestamps = sent.map((m) => m.timestamp ?? "").sort();
          if (untimed) {
            expect(Number(decoded.firstTimestamp)).toBeGreaterThanOrEqual(before);
            expect(Number(decoded.firstTimestamp)).toBeLessThanOrEqual(after);
            sortedTimestamps.fill(decoded.firstTimestamp);
          }
          expect(decoded.firstTimestamp).toBe(sortedTimestamps[0]);
          expect(decoded.maxTimestamp).toBe(sortedTimestamps[sortedTimestamps.length - 1]);
          expect(decoded.records.map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp, offset: r.offset }))).toEqual(
            sent.map((m, offset) => ({ key: asBuffer(m.key), value: asBuffer(m.value), timestamp: m.timestamp ?? decoded.firstTimestamp, offset: String(offset) })),
          );
          for (const [j, r] of decoded.records.entries()) {
            // kafkajs's decoder gives a key sent once as one Buffer, a repeated key as an array.
            const headers = Object.entries(sent[j]?.headers ?? {}).map(([k, v]) => [k, Array.isArray(v) ? (v.length === 1 ? asBuffer(v[0]) : v.map(asBuffer)) : asBuffer(v)]);
            expect(r.headers).toEqual(Object.fromEntries(headers));
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it("groups messages by partition in order, each message once", () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 5 }), { maxLength: 200 }), (partitions) => {
        const messages = partitions.map((partition, i) => ({ value: String(i), partition }));
        const grouped = groupMessagesPerPartition({ topic: "t", partitionMetadata: [{}], messages, partitioner: ({ message }) => message.partition ?? -1 });
        const expected: Record<string, KjsMessage[]> = {};
        for (const m of messages) (expected[m.partition] ??= []).push(m);
        expect(grouped).toEqual(expected);
      }),
    );
  });
});

const murmur2 = require("kafkajs/src/producer/partitioners/default/murmur2") as (key: Buffer | string) => number;
const Batch = require("kafkajs/src/consumer/batch") as new (
  topic: string,
  fetchedOffset: string,
  partitionData: { partition: number; highWatermark: string; abortedTransactions: unknown[]; messages: Array<{ offset: string; isControlRecord?: boolean }> },
) => { messages: Array<{ offset: string }> };

/** Java's Utils.murmur2 in 32-bit steps written with BigInt, as a reference independent of Math.imul. */
function murmur2Reference(data: Buffer): number {
  const u32 = (x: bigint) => BigInt.asUintN(32, x);
  const m = 0x5bd1e995n;
  let h = u32(0x9747b28cn ^ BigInt(data.length));
  const whole = data.length - (data.length % 4);
  for (let i = 0; i < whole; i += 4) {
    let k = BigInt(data.readUInt32LE(i));
    k = u32(k * m);
    k ^= k >> 24n;
    k = u32(k * m);
    h = u32(h * m) ^ k;
  }
  const rest = data.length % 4;
  if (rest >= 3) h ^= BigInt(data[whole + 2]!) << 16n;
  if (rest >= 2) h ^= BigInt(data[whole + 1]!) << 8n;
  if (rest >= 1) h = u32((h ^ BigInt(data[whole]!)) * m);
  h ^= h >> 13n;
  h = u32(h * m);
  h ^= h >> 15n;
  return Number(BigInt.asIntN(32, h));
}

describe("kafkajs patch: the default partitioner's murmur2", () => {
  it("gives Java's Utils.murmur2 values (Kafka's own test vectors) and the reference's on any key", () => {
    // From Kafka's UtilsTest.testMurmur2: a key lands on the partition a Java producer would choose.
    expect(murmur2("21")).toBe(-973932308);
    expect(murmur2("foobar")).toBe(-790332482);
    expect(murmur2("a-little-bit-long-string")).toBe(-985981536);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const key = Buffer.from(bytes);
        expect(murmur2(key)).toBe(murmur2Reference(key));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 30 }), (s) => {
        expect(murmur2(s)).toBe(murmur2Reference(Buffer.from(s)));
      }),
    );
  });
});

describe("kafkajs patch: a fetch's messages before the fetched offset", () => {
  it("are dropped by offset, as numbers below 2^53 and as Longs beyond", () => {
    const offsets = (fetched: string, all: string[]) =>
      new Batch("t", fetched, { partition: 0, highWatermark: "0", abortedTransactions: [], messages: all.map((offset) => ({ offset })) }).messages.map((m) => m.offset);
    expect(offsets("5", ["3", "4", "5", "6", "10"])).toEqual(["5", "6", "10"]);
    expect(offsets("0", ["0", "1"])).toEqual(["0", "1"]);
    // Past 2^53 numbers are not exact: 9007199254740993 would equal ...992 as a number.
    expect(offsets("9007199254740993", ["9007199254740992", "9007199254740993", "9007199254740994"])).toEqual(["9007199254740993", "9007199254740994"]);
    expect(offsets("9007199254740991", ["9007199254740990", "9007199254740991", "9007199254740992"])).toEqual(["9007199254740991", "9007199254740992"]);
  });
});
