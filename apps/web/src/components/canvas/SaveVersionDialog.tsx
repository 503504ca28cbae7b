"use client";
// "Save version": the draft becomes an immutable numbered version, with a message. Refused while
// the shared validator finds errors (the server checks again); warnings are listed before saving
// and reported after.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { validatePipeline, type Issue } from "@keyflow/operators";
import { useTRPC } from "../../trpc/react";
import { useEditor, useValidation } from "./EditorContext";
import { Modal } from "./Modal";
import { useToast } from "./Toasts";

export function SaveVersionDialog() {
  const { store, pipeline, commands, markSaved } = useEditor();
  const { issues } = useValidation();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const [message, setMessage] = useState("");
  const [error, setError] = useState<{ message: string; issues: readonly Issue[] } | null>(null);
  const save = useMutation(trpc.pipeline.saveVersion.mutationOptions());
  const warnings = issues.filter((i) => i.severity === "warning");

  const submit = async () => {
    const doc = store.getState().doc;
    const verdict = validatePipeline(doc);
    if (!verdict.ok) {
      setError({ message: "The pipeline has errors; fix them first.", issues: verdict.issues.filter((i) => i.severity === "error") });
      return;
    }
    try {
      const result = await save.mutateAsync({ pipelineId: pipeline.id, graph: doc, message: message.trim() });
      markSaved(doc);
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: trpc.pipeline.get.queryKey({ id: pipeline.id }) }),
        queryClient.invalidateQueries({ queryKey: trpc.pipeline.list.queryKey() }),
      ]);
      const n = result.warnings.length;
      toast({
        tone: n ? "warning" : "success",
        title: `Saved version v${result.version.number}`,
        message: n ? `With ${n} warning${n === 1 ? "" : "s"}: ${result.warnings[0]?.message ?? ""}` : result.version.message || undefined,
      });
      commands.closeDialog();
    } catch (e) {
      const data = (e as { data?: { pipelineIssues?: Issue[] | null } }).data;
      setError({ message: e instanceof Error ? e.message : String(e), issues: data?.pipelineIssues?.filter((i) => i.severity === "error") ?? [] });
    }
  };

  return (
    <Modal title="Save version" onClose={commands.closeDialog} testId="save-version-dialog">
      <form
        className="kf-modal__body"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label className="kf-field__label" htmlFor="kf-version-message">
          What changed, and why
        </label>
        <textarea
          id="kf-version-message"
          className="kf-input"
          rows={3}
          data-autofocus
          placeholder="e.g. Velocity: 5 payments per card in 10 minutes (SAMA 4.2)"
          value={message}
          data-testid="save-version-message"
          onChange={(e) => setMessage(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              void submit();
            }
          }}
        />
        <p className="kf-modal__foot">A version never changes once saved; the draft keeps autosaving. Ctrl+Enter saves.</p>
        {warnings.length > 0 ? (
          <div className="kf-modal__warnings" data-testid="save-version-warnings">
            <strong>
              {warnings.length} warning{warnings.length === 1 ? "" : "s"} (saving is allowed):
            </strong>
            <ul>
              {warnings.map((w, i) => (
                <li key={i}>{w.message}</li>
              ))}
            </ul>
          </div>
        ) : null}
        {error ? (
          <div className="kf-modal__error" role="alert" data-testid="save-version-error">
            <strong>{error.message}</strong>
            {error.issues.length ? (
              <ul>
                {error.issues.map((i, n) => (
                  <li key={n}>{i.message}</li>
                ))}
              </ul>
            ) : null}
          </div>
        ) : null}
        <div className="kf-modal__actions">
          <button type="button" className="kf-button" onClick={commands.closeDialog}>
            Cancel
          </button>
          <button type="submit" className="kf-button kf-button--primary" disabled={save.isPending} data-testid="save-version-confirm">
            {save.isPending ? "Saving…" : "Save version"}
          </button>
        </div>
      </form>
    </Modal>
  );
}
