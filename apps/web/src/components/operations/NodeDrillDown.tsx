"use client";
// Node drill-down of a running deployment: the runner's taps on a node (the last records into it,
// its last dead letters with their reasons), and a key lookup in the runner's queryable state.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";

function time(at: number): string {
  return new Date(at).toLocaleTimeString("en-GB", { hour12: false });
}

/** `nodes`: the running job's nodes as the runner lists them. */
export function NodeDrillDown({ deploymentId, nodes }: { deploymentId: string; nodes: readonly { id: string; type: string }[] }) {
  const trpc = useTRPC();
  const [nodeId, setNodeId] = useState<string>(() => nodes.find((n) => n.type.startsWith("sink."))?.id ?? nodes[0]?.id ?? "");
  const [keyDraft, setKeyDraft] = useState("");
  const [lookup, setLookup] = useState<{ nodeId: string; key: string } | null>(null);
  const taps = useQuery({ ...trpc.deployment.taps.queryOptions({ deploymentId, nodeId }), enabled: nodeId !== "", refetchInterval: 2_000, retry: false });
  const state = useQuery({ ...trpc.deployment.keyState.queryOptions({ deploymentId, nodeId: lookup?.nodeId ?? "", key: lookup?.key ?? "" }), enabled: lookup !== null, retry: false });
  const t = taps.data;
  return (
    <section className="kf-ops__section" aria-label="Node drill-down" data-testid="drilldown-panel">
      <header className="kf-ops__header">
        <h3>Node drill-down</h3>
        <select aria-label="node" data-testid="drilldown-node" value={nodeId} onChange={(e) => setNodeId(e.target.value)}>
          {nodes.map((n) => (
            <option key={n.id} value={n.id}>
              {n.id} ({n.type})
            </option>
          ))}
        </select>
      </header>
      {taps.error ? <p className="kf-ops__error">{taps.error.message}</p> : null}
      {t ? (
        <>
          <p className="kf-ops__meta">
            Last records into {nodeId}: {t.records.length} of {t.recordsSeen.toLocaleString("en")} seen (taps keep the last 20 records into each sink, and the last 20 dead letters of each node)
          </p>
          {t.records.length > 0 ? (
            <ol className="kf-ops__records" data-testid="drilldown-records">
              {[...t.records].reverse().map((r, i) => (
                <li key={i}>
                  <span className="kf-ops__meta">
                    {time(r.at)}
                    {r.key !== undefined ? ` · key ${r.key}` : ""}
                  </span>{" "}
                  <code>{JSON.stringify(r.value)}</code>
                </li>
              ))}
            </ol>
          ) : null}
          <p className="kf-ops__meta">Dead letters of {nodeId}: {t.deadLettersSeen.toLocaleString("en")}</p>
          {t.deadLetters.length > 0 ? (
            <ol className="kf-ops__records" data-testid="drilldown-dead-letters">
              {[...t.deadLetters].reverse().map((d, i) => (
                <li key={i}>
                  <span className="kf-ops__meta">
                    {time(d.at)}
                    {d.port ? ` · port ${d.port}` : ""}
                    {d.origin?.partition !== undefined ? ` · partition ${d.origin.partition}` : ""}
                    {d.origin?.offset !== undefined ? ` offset ${d.origin.offset}` : ""}
                  </span>{" "}
                  <strong className="kf-ops__error">{d.reason}</strong> <code>{d.raw ?? JSON.stringify(d.value)}</code>
                </li>
              ))}
            </ol>
          ) : null}
        </>
      ) : null}
      <form
        className="kf-ops__controls"
        onSubmit={(e) => {
          e.preventDefault();
          if (keyDraft.trim() !== "") setLookup({ nodeId, key: keyDraft.trim() });
        }}
      >
        <input aria-label="key" placeholder="key, e.g. card-0042" data-testid="drilldown-key" value={keyDraft} onChange={(e) => setKeyDraft(e.target.value)} />
        <button type="submit" className="kf-button kf-button--small" data-testid="drilldown-lookup" disabled={keyDraft.trim() === ""}>
          Look up state
        </button>
      </form>
      {lookup && state.error ? (
        <p className="kf-ops__error" data-testid="drilldown-state-error">
          {state.error.message}
        </p>
      ) : null}
      {lookup && state.data ? (
        <div data-testid="drilldown-state" data-key={state.data.key}>
          <p className="kf-ops__meta">
            State of key <code>{state.data.key}</code> at {state.data.nodeId}: {state.data.state.state.length} entr{state.data.state.state.length === 1 ? "y" : "ies"},{" "}
            {state.data.state.timers.eventTime.length + state.data.state.timers.processingTime.length} timer(s)
            {state.data.state.watermark !== null ? ` · node watermark ${new Date(state.data.state.watermark).toISOString()}` : ""}
          </p>
          <table className="kf-ops__table">
            <thead>
              <tr>
                <th>state</th>
                <th>kind</th>
                <th>value</th>
              </tr>
            </thead>
            <tbody>
              {state.data.state.state.map((e) => (
                <tr key={e.name} data-testid={`drilldown-state-${e.name}`}>
                  <td>{e.name}</td>
                  <td>{e.kind}</td>
                  <td>
                    <pre className="kf-ops__state">{JSON.stringify(e.value, null, 1)}</pre>
                    {e.ttlStamp !== undefined ? <span className="kf-ops__meta">last access {new Date(e.ttlStamp).toISOString()}</span> : null}
                  </td>
                </tr>
              ))}
              {[...state.data.state.timers.eventTime.map((t) => ({ ...t, domain: "event time" })), ...state.data.state.timers.processingTime.map((t) => ({ ...t, domain: "processing time" }))].map((t, i) => (
                <tr key={`timer-${i}`}>
                  <td>timer {t.namespace}</td>
                  <td>{t.domain}</td>
                  <td>{new Date(t.time).toISOString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
