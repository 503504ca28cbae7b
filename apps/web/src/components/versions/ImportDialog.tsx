"use client";
// Import a keyflow.pipeline/v1 file: read and validated in the browser first (JSON errors with line
// and column, the validator's issues), then stored as a draft, of a new pipeline or of the one on
// screen. A draft may have errors (they are shown, to be fixed on the canvas); a file that is not a
// pipeline document is refused.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";
import { Dialog } from "./Dialog";
import { IssueList } from "./IssueList";
import { readPipelineFile, uniqueName, type ReadPipelineFile } from "./pipeline-file";

export function ImportDialog({ current, onClose, onImported }: { current?: { id: string; name: string } | undefined; onClose: () => void; onImported: (pipelineId: string) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.pipeline.list.queryOptions());
  const [file, setFile] = useState<{ name: string; read: ReadPipelineFile } | null>(null);
  const [name, setName] = useState("");
  const importDraft = useMutation(
    trpc.pipeline.importDraft.mutationOptions({
      onSuccess: async (result) => {
        if (!result.ok) return;
        await queryClient.invalidateQueries({ queryKey: trpc.pipeline.list.queryKey() });
        await queryClient.invalidateQueries({ queryKey: trpc.pipeline.get.queryKey({ id: result.pipelineId }) });
        onImported(result.pipelineId);
      },
    }),
  );

  const onFile = async (f: File | undefined) => {
    if (!f) return;
    const read = readPipelineFile(await f.text());
    setFile({ name: f.name, read });
    importDraft.reset();
    if (read.ok) setName(uniqueName(read.document.name, (list.data ?? []).map((p) => p.name)));
  };

  const read = file?.read;
  const result = importDraft.data;
  return (
    <Dialog title="Import a pipeline file" onClose={onClose} testId="import-dialog">
      <p className="kf-muted">A <code>keyflow.pipeline/v1</code> JSON file, as exported here or run with <code>keyflow run</code>.</p>
      <input type="file" accept=".json,application/json" data-testid="import-file" onChange={(e) => void onFile(e.target.files?.[0])} />
      {read && !read.ok && read.stage === "json" ? (
        <div className="kf-form-error" role="alert" data-testid="import-problem">
          {file?.name}
          {read.line !== undefined ? `:${read.line}:${read.column ?? 1}` : ""}: not valid JSON: {read.message}
        </div>
      ) : null}
      {read && !read.ok && read.stage === "document" ? (
        <div className="kf-form-error" role="alert" data-testid="import-problem">
          {file?.name} is not a pipeline document:
          <IssueList issues={read.issues} />
        </div>
      ) : null}
      {read?.ok ? (
        <div className="kf-import" data-testid="import-preview">
          <p>
            <strong>{read.document.name}</strong> · {read.document.nodes.length} nodes, {read.document.edges.length} edges ·{" "}
            <span className={read.errors > 0 ? "kf-text-error" : "kf-text-ok"} data-testid="import-verdict">
              {read.errors > 0 ? `${read.errors} error${read.errors === 1 ? "" : "s"} to fix before it can be saved as a version` : "valid"}
              {read.warnings > 0 ? `, ${read.warnings} warning${read.warnings === 1 ? "" : "s"}` : ""}
            </span>
          </p>
          <IssueList issues={read.issues} testId="import-issues" />
          <div className="kf-import__actions">
            <label className="kf-field">
              <span>New pipeline named</span>
              <input className="kf-input" value={name} onChange={(e) => setName(e.target.value)} data-testid="import-name" />
            </label>
            <button
              type="button"
              className="kf-button kf-button--primary"
              disabled={importDraft.isPending || name.trim() === ""}
              data-testid="import-create"
              onClick={() => importDraft.mutate({ graph: read.value, name: name.trim() })}
            >
              Create pipeline
            </button>
            {current ? (
              <button type="button" className="kf-button" disabled={importDraft.isPending} data-testid="import-into" onClick={() => importDraft.mutate({ graph: read.value, into: current.id })}>
                Replace the draft of {current.name}
              </button>
            ) : null}
          </div>
        </div>
      ) : null}
      {importDraft.error ? (
        <div className="kf-form-error" role="alert">
          {importDraft.error.message}
        </div>
      ) : null}
      {result && !result.ok ? (
        <div className="kf-form-error" role="alert">
          Not imported:
          <IssueList issues={result.issues} />
        </div>
      ) : null}
    </Dialog>
  );
}
