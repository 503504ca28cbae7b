// The `errors` side output shared by the operators that divert records they cannot process (a
// missing key field, an expression that fails on this record). Records use the engine's
// ErrorOutput shape ({ error, record }) so that errors raised by the engine itself (a
// KeySelector failing) and by operators look the same on the port and in dead letters.
import { errorOutput, type ErrorOutput, type JsonObject } from "../core/api";
import type { OutputPortSpec, StreamKind } from "../core/spec";

export type ErrorRecord = ErrorOutput;

/** An `errors` record whose message names the node (prefixed when the message does not already). */
export function errorRecord(nodeId: string, error: string, record: JsonObject): ErrorRecord {
  return errorOutput(record, error.startsWith(`node "${nodeId}"`) ? error : `node "${nodeId}": ${error}`);
}

/** The `errors` port; unconnected, its records become dead letters of the job (never dropped). */
export function errorsPort(kind: StreamKind = "stream"): OutputPortSpec {
  return {
    id: "errors",
    label: "errors",
    kind,
    side: true,
    description: "Records this node could not process, as { error, record } with the record unchanged; unconnected, they become dead letters",
  };
}
