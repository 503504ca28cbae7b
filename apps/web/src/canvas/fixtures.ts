// Test fixtures for the canvas: a small catalog (shapes only) and the velocity-rule document that
// the seeds use, with a late side output and a reference input.
import type { PipelineDocumentInput } from "@keyflow/operators";
import type { CatalogLookup, OperatorShape } from "./flow";

const shapes: OperatorShape[] = [
  { type: "source.kafka", title: "Kafka source", category: "source", stateful: false, inputs: [], outputs: [{ id: "out", label: "Records", kind: "stream", side: false }] },
  {
    type: "keyBy",
    title: "Key by",
    category: "keying",
    stateful: false,
    inputs: [{ id: "in", label: "Records", accepts: ["stream", "keyed"], multiple: false, required: true }],
    outputs: [{ id: "out", label: "Keyed", kind: "keyed", side: false }],
  },
  {
    type: "velocity",
    title: "Velocity check",
    category: "pattern",
    stateful: true,
    inputs: [
      { id: "in", label: "Keyed records", accepts: ["keyed"], multiple: false, required: true },
      { id: "reference", label: "Limits", accepts: ["reference"], multiple: false, required: false },
    ],
    outputs: [
      { id: "out", label: "Alerts", kind: "keyed", side: false },
      { id: "late", label: "Late records", kind: "same", side: true },
      { id: "errors", label: "Errors", kind: "same", side: true },
    ],
  },
  { type: "sink.kafka", title: "Kafka sink", category: "sink", stateful: false, inputs: [{ id: "in", label: "Records", accepts: ["stream", "keyed"], multiple: true, required: true }], outputs: [] },
];

const byType = new Map(shapes.map((s) => [s.type, s]));
export const testCatalog: CatalogLookup = (type) => byType.get(type);

export function velocityDocument(withPositions: boolean): PipelineDocumentInput {
  const at = (x: number, y: number) => (withPositions ? { position: { x, y } } : {});
  return {
    format: "keyflow.pipeline/v1",
    name: "card-velocity",
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: "payments", startFrom: "latest", timestampField: "ts" }, ...at(0, 0) },
      { id: "limits", type: "source.kafka", params: { topic: "limits", startFrom: "earliest", timestampField: "ts" }, ...at(0, 240) },
      { id: "byCard", type: "keyBy", params: { field: "cardId" }, ...at(320, 0) },
      { id: "vel", type: "velocity", label: "5 payments in 10m", params: { count: 5, window: "10m", rules: [1, 2] }, ...at(640, 0) },
      { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, ...at(960, 0) },
      { id: "lateSink", type: "sink.kafka", params: { topic: "late" }, ...at(960, 200) },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "limits", to: "vel:reference" },
      { from: "vel", to: "alerts" },
      { from: "vel:late", to: "lateSink" },
    ],
  };
}
