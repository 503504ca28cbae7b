// dedup: lets the first copy of each id through and holds back the copies that follow within a TTL
// of event time — the seeds' first pattern (at-least-once delivery from Kafka), keyed by the id
// itself so it needs no keyBy. State is one timestamp per live id, freed by an event-time timer
// when its TTL has passed, so an unbounded stream of unique ids keeps a bounded state.
import { z } from "zod";
import type { Operator, ProcessContext, StreamRecord } from "../../core/api";
import { canonicalKey } from "../../core/keys";
import { defineOperator } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { durationMs } from "../../pipeline/durations";
import { errorsPort } from "../side-outputs";
import { fieldParamIssues, readField } from "../shared/fields";
import { EXPIRY_TIMER, HandleDedupStore, PASSED_AT, PREFETCH_CHUNK, SlotDedupStore, type DedupStore } from "./store";

export const dedupParams = z.strictObject({
  field: fieldName().describe(
    "Field whose value identifies a record, e.g. \"eventId\" (a dotted path such as \"meta.id\" reaches nested fields); the node keys the stream by it",
  ),
  ttlMs: durationMs().describe(
    "How long (ms of event time, or e.g. \"24h\") after a record passed its copies are held back; longer than the longest redelivery delay upstream",
  ),
});
export type DedupParams = z.infer<typeof dedupParams>;

export const dedupSpec = defineOperator({
  type: "dedup",
  version: 1,
  category: "pattern",
  title: "Deduplicate",
  summary: "Pass the first record of each id; hold back its copies for a TTL of event time",
  docs: `Keys the stream by \`field\` (no keyBy needed; a record without it goes to \`errors\`) and passes a record,
unchanged, when no record with the same value passed at an event time later than *t − ttlMs*. The first copy to
**arrive** wins; a copy stamped earlier than the one that passed is a duplicate too, as long as the passed one is
within \`ttlMs\` of it.

Copies held back go to the \`duplicates\` port as \`{ key, ts, passedAt, duplicates, record }\`, where
\`duplicates\` counts the copies of that id held back so far (1 for the first) and \`record\` is the copy unchanged.

**State.** Per id that passed within the TTL: when it passed, and a counter once it has copies. An event-time timer at
*passedAt + ttlMs* frees it, so state holds only the ids seen within the last \`ttlMs\` of event time (the seeds'
"billions of keys without TTL" trap designed out).

**Pitfalls.** \`ttlMs\` must exceed the longest delay between copies (Kafka redeliveries after a rebalance, a
producer retrying for an hour). Once the watermark has passed *passedAt + ttlMs* the id is forgotten: a copy that
arrives even later passes again. Dedup decides on arrival and has no \`late\` port: a late record is still
compared with the state that remains.`,
  params: dedupParams,
  inputs: [{ id: "in", label: "records", accepts: ["stream", "keyed"], required: true }],
  outputs: [
    { id: "out", label: "first copies", kind: "keyed", description: "Each record whose id did not pass within the TTL, unchanged, keyed by the id" },
    {
      id: "duplicates",
      label: "duplicates",
      kind: "keyed",
      side: true,
      description: "Copies held back, as { key, ts, passedAt, duplicates, record }",
    },
    errorsPort(),
  ],
  requiresKeyedInput: false,
  stateful: true,
  stateRetention: (params) => ({ ttlMs: params.ttlMs, ttlParam: "ttlMs", freedByTimers: true }),
  // The handle storage's expiry timer of an id, at passedAt + ttlMs (the heap storage's schedule holds it instead).
  impliedTimers: (params) => ({ state: PASSED_AT, namespaces: [EXPIRY_TIMER], of: (_key, passedAt) => (typeof passedAt === "number" ? [[passedAt + params.ttlMs, EXPIRY_TIMER]] : []) }),
  check: (params, ctx) => fieldParamIssues(ctx, [{ param: "field", field: params.field, severity: "error", consequence: "every record would go to errors" }]),
  outputFields: (_params, inputFields) => inputFields,
  keySelector(params) {
    const what = `field "${params.field}"`;
    return (value) => canonicalKey(readField(value, params.field), what);
  },
  create(params): Operator {
    // The storage is the backend's choice (store.ts): flat columns on the heap, state handles and
    // timers elsewhere; the decision below is the same for both.
    let store: DedupStore;
    /** prefetched: the record's index in the chunk store.prefetch() read ahead, or -1. */
    const decide = (record: StreamRecord, ctx: ProcessContext, prefetched: number): void => {
      const ts = record.timestamp;
      const key = ctx.key as string;
      const passed = store.passedAt(key, ctx, prefetched);
      if (passed !== undefined && passed > ts - params.ttlMs) {
        const n = store.addDuplicate(key);
        ctx.sideOutput("duplicates", { key, ts, passedAt: passed, duplicates: n, record: record.value }, ts);
        return;
      }
      // A record passes only at least ttlMs after the previous one, so passedAt only grows.
      store.pass(key, ts, ctx);
      ctx.output(record.value, ts);
    };
    return {
      open(ctx) {
        store = ctx.adoptState !== undefined ? new SlotDedupStore(params.ttlMs) : new HandleDedupStore(params.ttlMs);
        store.open(ctx);
      },
      processElement(record, ctx) {
        decide(record, ctx, -1);
      },
      // A chunk's ids are hashed and their table positions read first, then the records decided in
      // order: over a million live ids each lookup is a cache miss, and these then overlap.
      processBatch(records, from, to, ctx) {
        for (let f = from; f < to; f += PREFETCH_CHUNK) {
          const t = Math.min(to, f + PREFETCH_CHUNK);
          const prefetched = store.prefetch(records, f, t);
          for (let i = f; i < t; i++) {
            const r = records[i] as StreamRecord;
            ctx.enter(r);
            decide(r, ctx, prefetched ? i - f : -1);
          }
        }
      },
      onTimer(timer) {
        store.onTimer(timer);
      },
      onWatermark(watermark) {
        store.onWatermark(watermark);
      },
    };
  },
});
