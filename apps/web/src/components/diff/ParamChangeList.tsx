"use client";
// The diff as a list: nodes added and removed, each changed node with its parameter changes
// (path, before → after), edges added and removed, settings. Clicking a node's entry shows it.
import type { PipelineDiff } from "../../diff/diff";
import { countChanges, describeChangeCount, formatValue } from "../../diff/diff";

export function ParamChangeList({ diff, onShowNode }: { diff: PipelineDiff; onShowNode?: (nodeId: string) => void }) {
  const total = countChanges(diff);
  const nodeButton = (id: string) =>
    onShowNode ? (
      <button type="button" className="kf-linkbutton" onClick={() => onShowNode(id)} title={`Show node ${id}`}>
        {id}
      </button>
    ) : (
      <code>{id}</code>
    );
  return (
    <div className="kf-changes" data-testid="diff-changes">
      <p className="kf-changes__summary" data-testid="diff-summary">
        {describeChangeCount(total)}
      </p>
      {total === 0 ? <p className="kf-muted">The two documents draw the same pipeline.</p> : null}
      {diff.changedNodes.map((node) => (
        <section key={node.id} className="kf-changes__node kf-changes__node--changed" data-testid={`diff-node-${node.id}`}>
          <h4>
            <span className="kf-dot kf-dot--changed" aria-hidden="true" /> changed {nodeButton(node.id)} <span className="kf-muted">{node.type}</span>
          </h4>
          <table className="kf-changes__table">
            <thead>
              <tr>
                <th>param</th>
                <th>before</th>
                <th>after</th>
              </tr>
            </thead>
            <tbody>
              {node.changes.map((c) => (
                <tr key={`${c.kind}:${c.path}`} data-testid={`diff-change-${node.id}-${c.path}`}>
                  <td>
                    <code>{c.path}</code>
                  </td>
                  <td className="kf-changes__before">{formatValue(c.before)}</td>
                  <td className="kf-changes__after">{formatValue(c.after)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
      {diff.addedNodes.map((n) => (
        <section key={n.id} className="kf-changes__node" data-testid={`diff-node-${n.id}`}>
          <h4>
            <span className="kf-dot kf-dot--added" aria-hidden="true" /> added {nodeButton(n.id)} <span className="kf-muted">{n.type}</span>
          </h4>
        </section>
      ))}
      {diff.removedNodes.map((n) => (
        <section key={n.id} className="kf-changes__node" data-testid={`diff-node-${n.id}`}>
          <h4>
            <span className="kf-dot kf-dot--removed" aria-hidden="true" /> removed {nodeButton(n.id)} <span className="kf-muted">{n.type}</span>
          </h4>
        </section>
      ))}
      {diff.addedEdges.length + diff.removedEdges.length > 0 ? (
        <section className="kf-changes__node">
          <h4>edges</h4>
          <ul className="kf-changes__edges">
            {diff.addedEdges.map((e) => (
              <li key={`+${e.key}`} data-testid={`diff-edge-added-${e.from}->${e.to}`}>
                <span className="kf-dot kf-dot--added" aria-hidden="true" /> <code>{`${e.from} → ${e.to}`}</code>
              </li>
            ))}
            {diff.removedEdges.map((e) => (
              <li key={`-${e.key}`} data-testid={`diff-edge-removed-${e.from}->${e.to}`}>
                <span className="kf-dot kf-dot--removed" aria-hidden="true" /> <code>{`${e.from} → ${e.to}`}</code>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      {diff.settings.length > 0 ? (
        <section className="kf-changes__node">
          <h4>pipeline</h4>
          <table className="kf-changes__table">
            <tbody>
              {diff.settings.map((c) => (
                <tr key={c.path}>
                  <td>
                    <code>{c.path}</code>
                  </td>
                  <td className="kf-changes__before">{formatValue(c.before)}</td>
                  <td className="kf-changes__after">{formatValue(c.after)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
    </div>
  );
}
