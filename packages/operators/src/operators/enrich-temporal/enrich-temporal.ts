// enrich.temporal: an event-time temporal join (Flink SQL's `JOIN ref FOR SYSTEM_TIME AS OF
// p.eventTime`). The reference side keeps versions per key; each main record waits until the
// watermark (the minimum over both inputs) passes it, then joins with the version valid at its own
// event time. The result depends only on the data, not on how the inputs interleaved: the
// enrichment used at scoring time can be reconstructed for audit.
import { z } from "zod";
import type { JsonObject, JsonValue, Operator } from "../../core/api";
import { defineOperator } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { durationMs } from "../../pipeline/durations";
import { errorRecord, errorsPort } from "../side-outputs";
import { enriched, enrichedFields, joinKeyOf, joinParams, missPort, readTimestamp } from "../shared/enrichment";
import { fieldParamIssues, isJsonObject } from "../shared/fields";
import { latePort, orderedOperator } from "../shared/ordered-input";

export const enrichTemporalParams = z.strictObject({
  ...joinParams,
  referenceTimestampField: fieldName().describe(
    "Field of the reference records saying from when a version is valid (epoch ms or ISO-8601), e.g. \"validFrom\"",
  ),
  ttlMs: durationMs()
    .optional()
    .describe("Optional: a version is valid for at most this long (ms of event time, or e.g. \"30d\") unless replaced sooner; unset: until the next version"),
});
export type EnrichTemporalParams = z.infer<typeof enrichTemporalParams>;

/** One version of a reference record: valid from `ts` until the next version (or ttlMs). */
interface Version {
  ts: number;
  value: JsonObject;
}

export const enrichTemporalSpec = defineOperator({
  type: "enrich.temporal",
  version: 1,
  category: "enrichment",
  title: "Enrich (temporal, as of event time)",
  summary: "Join each record with the reference version valid at its event time (FOR SYSTEM_TIME AS OF)",
  docs: `Connect a versioned reference stream (e.g. customer risk tiers) to the \`reference\` input. Each reference record is a
**version** of its \`referenceKeyField\`, valid from \`referenceTimestampField\` until the next version of that key (or for
at most \`ttlMs\`). Each main record at event time *t* waits until the watermark — the minimum over both inputs — passes
*t*, then is emitted with \`<targetField>\` = the version with the greatest validity time ≤ *t* and
\`<targetField>Version\` = that validity time: the version that was in force when the transaction happened, whatever
arrived since. Re-running the job gives the same enrichment, which is what an audit needs.

**Misses.** No version valid at *t*: with \`onMiss: "miss-port"\` (default) the main record goes, unchanged, to
\`miss\`, with \`"pass-with-nulls"\` it is emitted with nulls. Late main records go to \`late\`; records without a usable
key (or a reference without a validity time) to \`errors\`.

**State.** Main records wait in keyed state (keyBy the main stream first, usually by \`keyField\`); the versions are
operator state, broadcast to every subtask. A version is dropped as soon as the watermark passes its successor's
validity time or its TTL: no on-time record can still need it, so the versioned state holds, per key, the versions
of the last out-of-orderness interval plus the one in force.

**Pitfalls.** A reference stream that stops producing watermarks holds every main record back: give its source an
idle timeout. A version that arrives after main records at its validity time were joined cannot change them.`,
  params: enrichTemporalParams,
  inputs: [
    { id: "in", label: "keyed records", accepts: ["keyed"], required: true },
    {
      id: "reference",
      label: "reference versions",
      accepts: ["reference", "stream", "keyed"],
      required: true,
      description: "Versions of the reference data, broadcast to every subtask",
    },
  ],
  outputs: [
    { id: "out", label: "enriched", kind: "keyed", description: "Main records with <targetField> and <targetField>Version (the version's validity time) added" },
    missPort(),
    latePort(),
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: () => ({ freedByTimers: true }), // main records leave with the watermark
  check: (params, ctx) => fieldParamIssues(ctx, [{ param: "keyField", field: params.keyField, severity: "error", consequence: "every record would go to errors" }]),
  outputFields: (params, inputFields) => enrichedFields(inputFields, params.targetField),
  create(params, init): Operator {
    /** Operator state: versions per reference key, sorted by validity time. */
    let versions = new Map<string, Version[]>();
    /** Watermark up to which every key was last pruned (pruning is an optimization; results never depend on it). */
    let sweptAt = Number.NEGATIVE_INFINITY;
    const sweepEvery = Math.max(1_000, params.ttlMs ?? 60_000);

    /** Drops the versions no on-time record can use once the watermark is at `watermark`. */
    const prune = (list: Version[], watermark: number): Version[] => {
      let first = 0;
      // A version whose successor is valid at or before the watermark is superseded for every t > watermark.
      while (first + 1 < list.length && (list[first + 1] as Version).ts <= watermark) first++;
      // The version in force at the watermark, if its TTL has run out, is of no use either (its successors are later).
      const head = list[first];
      if (params.ttlMs !== undefined && head !== undefined && head.ts + params.ttlMs <= watermark) first++;
      return first > 0 ? list.slice(first) : list;
    };

    /** The version valid at t, if any. */
    const asOf = (key: string, t: number): Version | undefined => {
      const list = versions.get(key);
      if (list === undefined) return undefined;
      let found: Version | undefined;
      for (const v of list) {
        if (v.ts > t) break;
        found = v;
      }
      if (found !== undefined && params.ttlMs !== undefined && t >= found.ts + params.ttlMs) return undefined;
      return found;
    };

    const ordered = orderedOperator({
      open() {},
      processInOrder(value, ts, ctx) {
        const key = joinKeyOf(value, params.keyField, "main");
        if (key instanceof Error) {
          ctx.sideOutput("errors", errorRecord(init.nodeId, `node "${init.nodeId}": ${key.message}`, value), ts);
          return;
        }
        const v = asOf(key, ts);
        if (v !== undefined) ctx.output(enriched(value, params.targetField, v.value, v.ts), ts);
        else if (params.onMiss === "pass-with-nulls") ctx.output(enriched(value, params.targetField, null, null), ts);
        else ctx.sideOutput("miss", value, ts);
      },
    });

    return {
      open: (ctx) => ordered.open?.(ctx),
      processElement(record, ctx) {
        if (ctx.inputPort !== "reference") {
          ordered.processElement(record, ctx);
          return;
        }
        const key = joinKeyOf(record.value, params.referenceKeyField, "reference");
        const validFrom = readTimestamp(record.value, params.referenceTimestampField);
        if (key instanceof Error || validFrom === undefined) {
          const why = key instanceof Error ? key.message : `reference field "${params.referenceTimestampField}" is missing or not a timestamp (epoch ms or ISO-8601)`;
          ctx.sideOutput("errors", errorRecord(init.nodeId, `node "${init.nodeId}": ${why}`, record.value));
          return;
        }
        const list = versions.get(key) ?? [];
        // Insert in validity order; a second version with the same validity time replaces the first.
        let i = list.length;
        while (i > 0 && (list[i - 1] as Version).ts > validFrom) i--;
        const replaces = i > 0 && (list[i - 1] as Version).ts === validFrom;
        const next = [...list.slice(0, replaces ? i - 1 : i), { ts: validFrom, value: record.value }, ...list.slice(i)];
        const kept = prune(next, ctx.timerService.currentWatermark());
        if (kept.length === 0) versions.delete(key);
        else versions.set(key, kept);
      },
      onTimer: (timer, ctx) => ordered.onTimer?.(timer, ctx),
      onWatermark(watermark) {
        // Main records due at this watermark were joined by their timers just before: prune now.
        if (watermark < sweptAt + sweepEvery && watermark !== Number.POSITIVE_INFINITY) return;
        sweptAt = watermark;
        for (const [key, list] of versions) {
          const kept = prune(list, watermark);
          if (kept.length === 0) versions.delete(key);
          else if (kept !== list) versions.set(key, kept);
        }
      },
      snapshotState(): JsonValue {
        return {
          sweptAt: Number.isFinite(sweptAt) ? sweptAt : null,
          versions: [...versions.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, list]) => [k, list.map((v) => [v.ts, v.value])]),
        };
      },
      restoreState(state: JsonValue): void {
        const bad = (what: string): Error => new Error(`node "${init.nodeId}": malformed enrich.temporal snapshot: ${what}`);
        if (!isJsonObject(state) || !Array.isArray(state.versions)) throw bad("no versions");
        const restored = new Map<string, Version[]>();
        for (const entry of state.versions) {
          if (!Array.isArray(entry) || typeof entry[0] !== "string" || !Array.isArray(entry[1])) throw bad(JSON.stringify(entry));
          const list: Version[] = [];
          for (const v of entry[1]) {
            if (!Array.isArray(v) || typeof v[0] !== "number" || !isJsonObject(v[1])) throw bad(JSON.stringify(v));
            list.push({ ts: v[0], value: v[1] });
          }
          restored.set(entry[0], list);
        }
        versions = restored;
        sweptAt = typeof state.sweptAt === "number" ? state.sweptAt : Number.NEGATIVE_INFINITY;
      },
    };
  },
});
