// Params shared by every source that reads event time from its records: where the timestamp is,
// how out of order records may arrive (the bounded-out-of-orderness watermark), when an idle
// partition stops holding the watermark back, and the declared record fields.
import { z } from "zod";
import type { OutputPortSpec } from "../core/spec";
import { fieldName } from "../expr/params";
import { durationMs } from "../pipeline/durations";

export const DEFAULT_MAX_OUT_OF_ORDERNESS_MS = 10_000;

export const timestampFieldParam = () =>
  fieldName().describe("Field holding the event time: epoch milliseconds (number) or an ISO-8601 string. A record without it goes to the dead-letter output");

export const maxOutOfOrdernessParam = () =>
  durationMs({ allowZero: true })
    .default(DEFAULT_MAX_OUT_OF_ORDERNESS_MS)
    .describe("How late (ms, or e.g. \"10s\") a record may arrive behind the newest one seen and still be on time: watermark = max event time − this − 1. Larger values tolerate more disorder but delay every window and timer by as much");

export const idleTimeoutParam = () =>
  durationMs()
    .optional()
    .describe("A partition without records for this long (ms of processing time, or e.g. \"30s\") is marked idle and stops holding back the watermark of the others; unset: an idle partition stalls event time");

export const declaredFieldsParam = () =>
  z
    .array(fieldName())
    .optional()
    .describe("The record's top-level field names, if known: enables completion and unknown-field checks in downstream expressions");

/** Every source has one output; malformed records become dead letters of the job, not records. */
export const sourceOutputs: readonly OutputPortSpec[] = [
  { id: "out", label: "records", kind: "stream", description: "Parsed records with their event time" },
];
