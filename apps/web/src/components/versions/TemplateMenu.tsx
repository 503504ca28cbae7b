"use client";
// "New from template": the seeds' patterns (examples/templates, tRPC templates.list) as ready-made
// pipelines; picking one creates a pipeline with that graph as its draft.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";
import { Dialog } from "./Dialog";
import { ImportDialog } from "./ImportDialog";
import { uniqueName } from "./pipeline-file";

export function TemplateDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (pipelineId: string) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const templates = useQuery(trpc.templates.list.queryOptions(undefined, { staleTime: Number.POSITIVE_INFINITY }));
  const list = useQuery(trpc.pipeline.list.queryOptions());
  const [picked, setPicked] = useState<string | null>(null);
  const [name, setName] = useState("");
  const create = useMutation(
    trpc.pipeline.create.mutationOptions({
      onSuccess: async (created) => {
        await queryClient.invalidateQueries({ queryKey: trpc.pipeline.list.queryKey() });
        onCreated(created.id);
      },
    }),
  );
  const template = templates.data?.find((t) => t.id === picked);

  return (
    <Dialog title="New pipeline from a template" onClose={onClose} testId="template-dialog" wide>
      {templates.error ? <div className="kf-form-error">{templates.error.message}</div> : null}
      {templates.isPending ? <p className="kf-muted">Loading templates…</p> : null}
      <div className="kf-templates">
        <ul className="kf-templates__list">
          {templates.data?.map((t) => (
            <li key={t.id}>
              <button
                type="button"
                className={`kf-templates__item${picked === t.id ? " kf-templates__item--picked" : ""}`}
                data-testid={`template-${t.id}`}
                onClick={() => {
                  setPicked(t.id);
                  setName(uniqueName(t.id, (list.data ?? []).map((p) => p.name)));
                  create.reset();
                }}
              >
                <strong>{t.title}</strong>
                <span className="kf-muted">{t.nodeCount} nodes · {t.operators.filter((o) => !o.startsWith("source.") && !o.startsWith("sink.")).join(", ")}</span>
              </button>
            </li>
          ))}
        </ul>
        <div className="kf-templates__detail">
          {template ? (
            <form
              onSubmit={(e) => {
                e.preventDefault();
                const n = name.trim();
                create.mutate({ name: n, description: template.description, graph: { ...template.graph, name: n } });
              }}
            >
              <h4>{template.title}</h4>
              <p>{template.description}</p>
              <label className="kf-field">
                <span>Pipeline name</span>
                <input className="kf-input" value={name} onChange={(e) => setName(e.target.value)} data-testid="template-name" />
              </label>
              <button type="submit" className="kf-button kf-button--primary" disabled={create.isPending || name.trim() === ""} data-testid="template-create">
                {create.isPending ? "Creating…" : "Create pipeline"}
              </button>
              {create.error ? (
                <div className="kf-form-error" role="alert">
                  {create.error.data?.inputIssues?.map((i) => i.message).join("; ") || create.error.message}
                </div>
              ) : null}
            </form>
          ) : (
            <p className="kf-muted">Pick a pattern. Each is a complete pipeline with Kafka sources and sinks, the seeds&apos; parameters, and its late records routed; change the topics and fields on the canvas.</p>
          )}
        </div>
      </div>
    </Dialog>
  );
}

/** The two buttons that create pipelines, for the pipeline list's header: from a template, from a file. */
export function NewPipelineButtons({ onCreated, current }: { onCreated: (pipelineId: string) => void; current?: { id: string; name: string } | undefined }) {
  const [open, setOpen] = useState<"template" | "import" | null>(null);
  return (
    <div className="kf-newfrom">
      <button type="button" className="kf-button kf-button--small" onClick={() => setOpen("template")} data-testid="new-from-template">
        New from template
      </button>
      <button type="button" className="kf-button kf-button--small" onClick={() => setOpen("import")} data-testid="import-pipeline">
        Import…
      </button>
      {open === "template" ? (
        <TemplateDialog
          onClose={() => setOpen(null)}
          onCreated={(id) => {
            setOpen(null);
            onCreated(id);
          }}
        />
      ) : null}
      {open === "import" ? <ImportDialog current={current} onClose={() => setOpen(null)} onImported={(id) => {
            setOpen(null);
            onCreated(id);
          }} /> : null}
    </div>
  );
}
