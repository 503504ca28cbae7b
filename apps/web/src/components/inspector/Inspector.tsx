"use client";
// The inspector: the selected node's label, notes, connections and params, as a form generated
// from its operator's params JSON Schema (fields.ts → ParamField). Errors show per field at once:
// what was typed (a duration that does not parse) before anything else, then the node's params
// checked against its zod schema on every keystroke, then the shared validator's findings on the
// whole graph (unknown fields in expressions, TTL shorter than the window, …).
import { useCallback, useEffect, useMemo } from "react";
import { parseEdgeEnd, validatePipeline, type Issue, type PipelineNode } from "@keyflow/operators";
import { setNodeMeta, setParam } from "../../canvas/graph-edit";
import { useEditor, useEditorState, useEditorUi, useValidation } from "../canvas/EditorContext";
import { Markdown } from "../palette/Markdown";
import { describeParams, issuesForField, issueText, type FieldDescriptor } from "./fields";
import { ParamField } from "./ParamField";

/** Codes of issues about a param's own value: checked at once on the node alone (see paramIssuesNow). */
const PARAM_SHAPE_CODES = new Set(["bad-param", "unknown-param"]);

/**
 * The node's params against its operator's schema, phrased by the shared validator; synchronous.
 * A required param left empty just says so (the schema's own message describes a wrong value).
 */
function paramIssuesNow(node: PipelineNode, name: string): Issue[] {
  const result = validatePipeline({ format: "keyflow.pipeline/v1", name, nodes: [{ ...node, position: undefined }], edges: [] });
  return result.issues
    .filter((i) => i.nodeId === node.id && PARAM_SHAPE_CODES.has(i.code))
    .map((i) => (i.code === "bad-param" && i.param !== undefined && !i.param.includes(".") && node.params[i.param] === undefined ? { ...i, message: `node "${node.id}": param "${i.param}" is required` } : i));
}

export function Inspector() {
  const { inspectorRef } = useEditor();
  const selection = useEditorState((s) => s.selection);
  const nodeId = selection.nodes.length === 1 && selection.edges.length === 0 ? selection.nodes[0] : undefined;
  return (
    <div className="kf-inspector" data-testid="inspector" ref={(el) => void (inspectorRef.current = el)}>
      {nodeId !== undefined ? <NodeInspector key={nodeId} nodeId={nodeId} /> : <SelectionSummary />}
    </div>
  );
}

function SelectionSummary() {
  const { commands, readOnly } = useEditor();
  const selection = useEditorState((s) => s.selection);
  const doc = useEditorState((s) => s.doc);
  const { counts } = useValidation();
  if (selection.nodes.length + selection.edges.length > 0) {
    return (
      <section className="kf-inspector__section">
        <h3 className="kf-inspector__title">
          {selection.nodes.length} node{selection.nodes.length === 1 ? "" : "s"}, {selection.edges.length} edge{selection.edges.length === 1 ? "" : "s"} selected
        </h3>
        <ul className="kf-inspector__ids">
          {selection.nodes.map((id) => (
            <li key={id}>
              <button type="button" className="kf-link" onClick={() => commands.focusNode(id)}>
                {id}
              </button>
            </li>
          ))}
          {selection.edges.map((id) => (
            <li key={id}>
              <code>{id.replace("->", " → ")}</code>
            </li>
          ))}
        </ul>
        {!readOnly ? (
          <div className="kf-inspector__actions">
            {selection.nodes.length > 0 ? (
              <button type="button" className="kf-button" onClick={commands.copy}>
                Copy <kbd>Ctrl C</kbd>
              </button>
            ) : null}
            <button type="button" className="kf-button kf-button--danger" onClick={commands.deleteSelection} data-testid="inspector-delete">
              Delete <kbd>Del</kbd>
            </button>
          </div>
        ) : null}
      </section>
    );
  }
  return (
    <section className="kf-inspector__section kf-inspector__empty">
      <h3 className="kf-inspector__title">{doc.name}</h3>
      <p className="kf-inspector__meta">
        {doc.nodes.length} node{doc.nodes.length === 1 ? "" : "s"} · {doc.edges.length} edge{doc.edges.length === 1 ? "" : "s"} ·{" "}
        {counts.errors ? `${counts.errors} error${counts.errors === 1 ? "" : "s"}` : "no errors"}
        {counts.warnings ? `, ${counts.warnings} warning${counts.warnings === 1 ? "" : "s"}` : ""}
      </p>
      <p className="kf-inspector__hint">Select a node to edit its params, label and notes.</p>
      <ul className="kf-inspector__tips">
        <li>
          <kbd>/</kbd> search operators, <kbd>Enter</kbd> adds one
        </li>
        <li>
          <kbd>C</kbd> connect the selected node
        </li>
        <li>
          <kbd>I</kbd> edit the selected node here
        </li>
        <li>
          <kbd>?</kbd> every shortcut
        </li>
      </ul>
    </section>
  );
}

function NodeInspector({ nodeId }: { nodeId: string }) {
  const { store, viewOf, commands, readOnly, inspectorRef } = useEditor();
  const node = useEditorState((s) => s.doc.nodes.find((n) => n.id === nodeId));
  const edges = useEditorState((s) => s.doc.edges);
  const pipelineName = useEditorState((s) => s.doc.name);
  const validation = useValidation();
  const { inspectorRequest } = useEditorUi();
  const view = node ? viewOf(node.type) : undefined;
  const fields = useMemo(() => (view ? describeParams(view.paramsSchema) : []), [view]);

  // Param shape errors now (this node alone), the rest from the validator's last run on the graph.
  const immediate = useMemo(() => (node ? paramIssuesNow(node, pipelineName) : []), [node, pipelineName]);
  const graphIssues = useMemo(() => validation.issues.filter((i) => i.nodeId === nodeId && !PARAM_SHAPE_CODES.has(i.code)), [validation.issues, nodeId]);
  const paramIssues = useMemo(() => [...immediate, ...graphIssues.filter((i) => i.param !== undefined)], [immediate, graphIssues]);
  const issuesFor = useCallback((field: FieldDescriptor) => issuesForField(field, paramIssues), [paramIssues]);
  const fieldKeys = useMemo(() => {
    const keys: string[] = [];
    const walk = (fs: readonly FieldDescriptor[]) => fs.forEach((f) => (keys.push(f.key), walk(f.fields ?? [])));
    walk(fields);
    return keys;
  }, [fields]);
  // Issues no field shows: about the node as a whole, or a param its operator does not have.
  const nodeIssues = useMemo(
    () => [...immediate, ...graphIssues].filter((i) => i.param === undefined || !fieldKeys.some((k) => i.param === k || i.param?.startsWith(`${k}.`))),
    [immediate, graphIssues, fieldKeys],
  );

  const onParam = useCallback(
    (path: readonly string[], value: unknown) => store.edit((d) => setParam(d, nodeId, path, value), { group: `param:${nodeId}:${path.join(".")}` }),
    [store, nodeId],
  );

  // Asked to show a param (a problem was clicked): scroll to its field and focus it.
  useEffect(() => {
    if (!inspectorRequest || inspectorRequest.nodeId !== nodeId || !inspectorRequest.param) return;
    const param = inspectorRequest.param;
    const key = [...fieldKeys].sort((a, b) => b.length - a.length).find((k) => param === k || param.startsWith(`${k}.`));
    if (!key) return;
    requestAnimationFrame(() => {
      const field = inspectorRef.current?.querySelector<HTMLElement>(`[data-field="${CSS.escape(key)}"]`);
      field?.scrollIntoView({ block: "center", behavior: "smooth" });
      field?.querySelector<HTMLElement>("input, textarea, select")?.focus({ preventScroll: true });
    });
  }, [inspectorRequest, nodeId, fieldKeys, inspectorRef]);

  if (!node) return null;
  const incoming = edges.filter((e) => parseEdgeEnd(e.to).nodeId === nodeId);
  const outgoing = edges.filter((e) => parseEdgeEnd(e.from).nodeId === nodeId);

  return (
    <div
      className={`kf-inspector__node kf-cat-${view?.category ?? "unknown"}`}
      onKeyDown={(e) => {
        // Escape leaves the form for the node on the canvas (keyboard users keep their place).
        if (e.key === "Escape") {
          e.preventDefault();
          (e.target as HTMLElement).blur();
          commands.focusNodeElement(nodeId);
        }
      }}
    >
      <header className="kf-inspector__head">
        <span className="kf-node__category">{view?.category ?? "unknown operator"}</span>
        <h3 className="kf-inspector__title">{node.label || view?.title || node.type}</h3>
        <p className="kf-inspector__meta">
          <code data-testid="inspector-node-id">{node.id}</code> · <code>{node.type}</code>
          {view ? ` · v${view.version}` : ""}
        </p>
        {view ? <p className="kf-inspector__summary">{view.summary}</p> : null}
        {view ? (
          <details className="kf-inspector__docs">
            <summary>Docs</summary>
            <Markdown source={view.docs} />
          </details>
        ) : null}
      </header>

      {nodeIssues.length > 0 ? (
        <ul className="kf-inspector__issues" data-testid="inspector-issues">
          {nodeIssues.map((issue, i) => (
            <li key={i} className={`kf-field__issue kf-field__issue--${issue.severity}`}>
              {issueText(issue)}
            </li>
          ))}
        </ul>
      ) : null}

      <section className="kf-inspector__section">
        <h4 className="kf-inspector__section-title">Node</h4>
        <div className="kf-field">
          <label className="kf-field__label" htmlFor={`label-${nodeId}`}>
            Label
          </label>
          <input
            id={`label-${nodeId}`}
            className="kf-input"
            value={node.label ?? ""}
            placeholder={view?.title ?? "A name for this node"}
            disabled={readOnly}
            data-testid="node-label"
            onChange={(e) => store.edit((d) => setNodeMeta(d, nodeId, { label: e.target.value }), { group: `meta:${nodeId}:label` })}
          />
        </div>
        <div className="kf-field">
          <label className="kf-field__label" htmlFor={`notes-${nodeId}`}>
            Notes
          </label>
          <textarea
            id={`notes-${nodeId}`}
            className="kf-input"
            rows={2}
            value={node.notes ?? ""}
            placeholder="Why this rule exists, a ticket, a regulation…"
            disabled={readOnly}
            data-testid="node-notes"
            onChange={(e) => store.edit((d) => setNodeMeta(d, nodeId, { notes: e.target.value }), { group: `meta:${nodeId}:notes` })}
          />
        </div>
      </section>

      <section className="kf-inspector__section">
        <h4 className="kf-inspector__section-title">Params</h4>
        {view ? (
          fields.length > 0 ? (
            <div className="kf-form" data-testid="inspector-form">
              {fields.map((field) => (
                <ParamField
                  key={field.key}
                  field={field}
                  params={node.params}
                  onChange={onParam}
                  issuesFor={issuesFor}
                  disabled={readOnly}
                  nodeId={nodeId}
                  operatorType={node.type}
                  {...(validation.inputFields[nodeId] ? { inputFields: validation.inputFields[nodeId] } : {})}
                />
              ))}
            </div>
          ) : (
            <p className="kf-inspector__hint">This operator has no params.</p>
          )
        ) : (
          <p className="kf-inspector__hint">The catalog does not know “{node.type}”: its params cannot be edited here.</p>
        )}
      </section>

      <section className="kf-inspector__section">
        <h4 className="kf-inspector__section-title">Connections</h4>
        <ul className="kf-inspector__edges" data-testid="inspector-connections">
          {incoming.map((e) => (
            <li key={`${e.from}->${e.to}`}>
              <code>{e.from}</code> → <code>{e.to}</code>
            </li>
          ))}
          {outgoing.map((e) => (
            <li key={`${e.from}->${e.to}`}>
              <code>{e.from}</code> → <code>{e.to}</code>
            </li>
          ))}
          {incoming.length + outgoing.length === 0 ? <li className="kf-inspector__hint">Not connected.</li> : null}
        </ul>
        {!readOnly ? (
          <div className="kf-inspector__actions">
            <button type="button" className="kf-button" onClick={commands.openConnect} data-testid="inspector-connect">
              Connect… <kbd>C</kbd>
            </button>
            <button type="button" className="kf-button kf-button--danger" onClick={commands.deleteSelection} data-testid="inspector-delete">
              Delete node <kbd>Del</kbd>
            </button>
          </div>
        ) : null}
      </section>
    </div>
  );
}
