// Typed params of the I/O nodes. The operator specs own the schemas; this re-parses a node's params
// with its spec (idempotent: the job already parsed them) and names the node when they do not fit.
import { getOperatorSpec, type SinkFileParams, type SinkKafkaParams, type SourceDemoParams, type SourceFileParams, type SourceKafkaParams } from "@keyflow/operators";

export interface IoParams {
  "source.kafka": SourceKafkaParams;
  "source.file": SourceFileParams;
  "source.demo": SourceDemoParams;
  "sink.kafka": SinkKafkaParams;
  "sink.file": SinkFileParams;
}
export type IoType = keyof IoParams;

export function ioParams<T extends IoType>(type: T, nodeId: string, params: unknown): IoParams[T] {
  const spec = getOperatorSpec(type);
  if (!spec) throw new Error(`node "${nodeId}": operator type "${type}" is missing from the catalog`);
  const parsed = spec.params.safeParse(params);
  if (!parsed.success) {
    const why = parsed.error.issues.map((i) => `param "${i.path.join(".")}": ${i.message}`).join("; ");
    throw new Error(`node "${nodeId}": ${why}`);
  }
  // The spec's schema is the definition of IoParams[T] (z.infer of it); the catalog's generic
  // OperatorSpec type forgets that, so the link is restated here once.
  return parsed.data as IoParams[T];
}
