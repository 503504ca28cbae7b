// The response of GET /jobs/:id/state?node=<nodeId>&key=<key> (queryable state), as a zod schema
// the web app's tRPC layer validates against: one key's state and registered timers at one node,
// read from the subtask that owns the key's key group (packages/operators runtime/queryable.ts).
import { z } from "zod";
import type { JsonValue } from "@keyflow/operators";

const jsonValue: z.ZodType<JsonValue> = z.lazy(() => z.union([z.null(), z.boolean(), z.number(), z.string(), z.array(jsonValue), z.record(z.string(), jsonValue)]));

const timerSchema = z.object({
  /** When the timer fires: event time (eventTime list) or processing time, ms since the epoch. */
  time: z.number(),
  /** The operator's name for the timer, e.g. "expiry". */
  namespace: z.string(),
});

export const keyStateResponseSchema = z.object({
  jobId: z.string(),
  nodeId: z.string(),
  /** The node's operator type, e.g. "velocity". */
  nodeType: z.string(),
  /** The key as the engine holds it (canonical: numbers and booleans as their strings). */
  key: z.string(),
  /** Which task answered: the keyed subtask owning the key's key group, or the source task (chained nodes). */
  subtask: z.object({ task: z.enum(["source", "keyed", "single"]), index: z.number().int().nonnegative() }),
  /** Each state the operator keeps for the key: value state, a list's elements, a map as an object, window slices. */
  state: z.array(
    z.object({
      name: z.string(),
      kind: z.enum(["value", "list", "map"]),
      value: jsonValue,
      /** TTL'd state: event time of the last access (expires at ttlStamp + the state's TTL). */
      ttlStamp: z.number().optional(),
    }),
  ),
  timers: z.object({ eventTime: z.array(timerSchema), processingTime: z.array(timerSchema) }),
  /** The node's current watermark (null before the first one), to read the event-time timers against. */
  watermark: z.number().nullable(),
});
export type KeyStateResponse = z.infer<typeof keyStateResponseSchema>;
