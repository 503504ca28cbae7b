// The pipeline the disk-backend tests and the checkpoint bench run: file source -> keyBy(card) ->
// topK(merchant) -> file sink. topK keeps four state tables per card (a map among them) and no
// timers, so its state is all keyed state and grows with the number of cards.
export function topKPipeline(o: { name: string; input: string; output: string; k?: number; settings?: Record<string, unknown>; late?: string }): Record<string, unknown> {
  return {
    format: "keyflow.pipeline/v1",
    name: o.name,
    settings: o.settings ?? {},
    nodes: [
      { id: "src", type: "source.file", params: { path: o.input, timestampField: "ts", maxOutOfOrdernessMs: 1000 } },
      { id: "byCard", type: "keyBy", params: { field: "card" } },
      { id: "top", type: "topK", params: { field: "merchant", k: o.k ?? 2 } },
      { id: "out", type: "sink.file", params: { path: o.output } },
      ...(o.late !== undefined ? [{ id: "late", type: "sink.file", params: { path: o.late } }] : []),
    ],
    edges: [
      { from: "src", to: "byCard" },
      { from: "byCard", to: "top" },
      { from: "top", to: "out" },
      ...(o.late !== undefined ? [{ from: "top:late", to: "late" }] : []),
    ],
  };
}
