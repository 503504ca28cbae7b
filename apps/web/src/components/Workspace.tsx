"use client";
// The designer's frame: pipelines and the operator palette on the left, the selected pipeline's
// canvas in the middle (toolbar above, problems below), the inspector and its document on the right.
//
// The draft of the selected pipeline is edited in an EditorProvider that lives as long as the
// pipeline is selected (so its undo history and pending autosave survive a look at an old
// version); a saved version opens read-only in a provider of its own, nested inside.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useMemo, useState, type FormEvent, type ReactNode } from "react";
import { createPortal } from "react-dom";
import { pipelineDocumentSchema, type PipelineDocument } from "@keyflow/operators";
import type { OperatorView } from "../catalog/operator-view";
import { useTRPC } from "../trpc/react";
import type { PipelineDetail, PipelineSummary } from "../trpc/types";
import { EditorCanvas } from "./canvas/EditorCanvas";
import { EditorProvider, useEditorState, useEditorUi, type EditorMode } from "./canvas/EditorContext";
import { EditorDialogs } from "./canvas/EditorDialogs";
import { EditorToolbar } from "./canvas/EditorToolbar";
import { ToastProvider } from "./canvas/Toasts";
import { DocumentPanel } from "./editor/DocumentPanel";
import { expressionParamEditors } from "./expression/param-editors";
import { Inspector } from "./inspector/Inspector";
import { LiveProvider } from "./live/LiveContext";
import { OperationsPanel, runningDeployment } from "./operations/OperationsPanel";
import { ParamEditorsContext } from "./inspector/ParamField";
import { Palette } from "./palette/Palette";
import { PipelineList } from "./PipelineList";
import { ProblemsPanel } from "./problems/ProblemsPanel";
import { formatTime } from "./format";
import { PipelineAuditTab } from "./audit/PipelineAuditTab";
import { UserMenu } from "./auth/UserMenu";
import { DryRunPanel, NewPipelineButtons, PipelineToolsProvider, VersionHistory, type DiffSide } from "./versions";
import "./canvas/editor.css";

/** What is on the canvas: the draft (the default: it is what the analyst edits) or a saved version. */
type Shown = { kind: "version"; number: number } | { kind: "draft" };

function pickVersion(pipeline: PipelineDetail, shown: Shown) {
  return shown.kind === "version" ? pipeline.versions.find((v) => v.number === shown.number) : undefined;
}

export function Workspace({ initialPipelineId }: { initialPipelineId: string | null }) {
  return (
    <ToastProvider>
      <WorkspaceFrame initialPipelineId={initialPipelineId} />
    </ToastProvider>
  );
}

function WorkspaceFrame({ initialPipelineId }: { initialPipelineId: string | null }) {
  const trpc = useTRPC();
  const list = useQuery(trpc.pipeline.list.queryOptions());
  const catalog = useQuery(trpc.catalog.list.queryOptions(undefined, { staleTime: Number.POSITIVE_INFINITY }));
  const [selectedId, setSelectedId] = useState<string | null>(initialPipelineId);
  const [shown, setShown] = useState<Shown>({ kind: "draft" });

  // Nothing chosen yet: open the most recently changed pipeline.
  const firstId = list.data?.[0]?.id ?? null;
  useEffect(() => {
    if (selectedId === null && firstId !== null) setSelectedId(firstId);
  }, [selectedId, firstId]);

  const select = useCallback((id: string) => {
    setSelectedId(id);
    setShown({ kind: "draft" });
    const url = new URL(window.location.href);
    url.searchParams.set("pipeline", id);
    window.history.replaceState(null, "", url);
  }, []);

  const detail = useQuery({ ...trpc.pipeline.get.queryOptions({ id: selectedId ?? "" }), enabled: selectedId !== null });
  const pipeline = detail.data;
  const version = pipeline ? pickVersion(pipeline, shown) : undefined;
  const pipelineId = pipeline?.id;
  const pipelineName = pipeline?.name;
  const pipelineKey = useMemo(() => (pipelineId !== undefined && pipelineName !== undefined ? { id: pipelineId, name: pipelineName } : null), [pipelineId, pipelineName]);
  const draftMode = useMemo<EditorMode>(() => ({ kind: "draft" }), []);
  const versionNumber = version?.number;
  const versionMode = useMemo<EditorMode | null>(() => (versionNumber !== undefined ? { kind: "version", number: versionNumber } : null), [versionNumber]);
  const backToDraft = useCallback(() => setShown({ kind: "draft" }), []);
  // The sidebar stays mounted whatever the canvas shows (a form being filled in survives the first
  // pipeline loading); the pipeline's palette is portalled into it from inside its editor.
  const [paletteHost, setPaletteHost] = useState<HTMLDivElement | null>(null);
  const editing = Boolean(pipeline && pipelineKey && catalog.data);
  const openVersion = useCallback((side: DiffSide) => setShown(side === "draft" ? { kind: "draft" } : { kind: "version", number: side }), []);

  const sidebar = (
    <>
      <NewPipeline pipelines={list.data} onCreated={select} />
      <NewPipelineButtons onCreated={select} current={pipelineKey ?? undefined} />
      <PipelineList pipelines={list.data} loading={list.isPending} error={list.error?.message ?? null} selectedId={selectedId} onSelect={select} />
    </>
  );

  const area = (mode: EditorMode) => (
    <PipelineArea
      paletteHost={paletteHost}
      operators={catalog.data ?? []}
      title={mode.kind === "draft" ? "draft (live)" : `v${mode.number}`}
      {...(mode.kind === "version" ? { onBackToDraft: backToDraft } : {})}
      {...(pipeline ? { tools: { pipeline, shown: mode.kind === "draft" ? "draft" : mode.number, onOpenVersion: openVersion, onSelectPipeline: select } } : {})}
    />
  );

  return (
    <div className="kf-app">
      <header className="kf-topbar">
        <div className="kf-brand">
          <svg className="kf-brand__mark" viewBox="0 0 24 24" aria-hidden="true">
            <path d="M4 6h6l4 6-4 6H4l4-6z" />
            <path d="M13 6h7l-4 6 4 6h-7l4-6z" opacity="0.55" />
          </svg>
          <span className="kf-brand__name">Keyflow</span>
          <span className="kf-brand__tag">pipeline designer</span>
        </div>
        {pipeline ? (
          <div className="kf-topbar__pipeline">
            <span className="kf-topbar__name" data-testid="pipeline-title">
              {pipeline.name}
            </span>
            <select
              className="kf-select"
              aria-label="Version shown"
              data-testid="version-select"
              value={shown.kind === "draft" || !version ? "draft" : String(version.number)}
              onChange={(e) => setShown(e.target.value === "draft" ? { kind: "draft" } : { kind: "version", number: Number(e.target.value) })}
            >
              <option value="draft">Draft (editable)</option>
              {pipeline.versions.map((v) => (
                <option key={v.id} value={String(v.number)}>
                  v{v.number}
                  {v.message ? ` · ${v.message}` : ""}
                </option>
              ))}
            </select>
            <VersionMeta pipeline={pipeline} shown={version ? { kind: "version", number: version.number } : { kind: "draft" }} />
          </div>
        ) : null}
        <UserMenu />
      </header>

      <aside className="kf-sidebar">
        {sidebar}
        <div className="kf-sidebar__palette" ref={setPaletteHost}>
          {editing ? null : <Palette operators={catalog.data} />}
        </div>
      </aside>

      {pipeline && pipelineKey && catalog.data ? (
        <EditorProvider key={pipeline.id} pipeline={pipelineKey} document={pipeline.draft} operators={catalog.data} mode={draftMode}>
          {version && versionMode ? (
            <EditorProvider key={`v${version.number}`} pipeline={pipelineKey} document={version.graph} operators={catalog.data} mode={versionMode}>
              {area(versionMode)}
            </EditorProvider>
          ) : (
            area(draftMode)
          )}
        </EditorProvider>
      ) : (
        <>
          <main className="kf-main">
            {detail.error ? (
              <div className="kf-empty kf-empty--error">{detail.error.message}</div>
            ) : (
              <div className="kf-empty">{selectedId === null && list.data?.length === 0 ? "No pipelines yet: create one with “New pipeline”." : "Loading…"}</div>
            )}
          </main>
          <section className="kf-panel" aria-label="Pipeline document">
            <DocumentPanel document={null} title="" />
          </section>
        </>
      )}
    </div>
  );
}

// ---- The pipeline's area: palette, canvas, problems, side panel ------------------------------------

/** The side panel's tabs. */
type SideTab = "inspector" | "document" | "history" | "dryrun" | "operations" | "audit";

/** What the pipeline tools (versions, diff, dry run, deploy) need from the frame. */
interface ToolsProps {
  pipeline: PipelineDetail;
  shown: DiffSide;
  onOpenVersion: (side: DiffSide) => void;
  onSelectPipeline: (id: string) => void;
}

function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = window.setTimeout(() => setDebounced(value), ms);
    return () => window.clearTimeout(timer);
  }, [value, ms]);
  return debounced;
}

function PipelineArea({
  paletteHost,
  operators,
  title,
  onBackToDraft,
  tools,
}: {
  paletteHost: HTMLElement | null;
  operators: readonly OperatorView[];
  title: string;
  onBackToDraft?: () => void;
  tools?: ToolsProps;
}) {
  const doc = useEditorState((s) => s.doc);
  const shownDoc = useDebounced<PipelineDocument>(doc, 400);
  const single = useEditorState((s) => (s.selection.nodes.length === 1 && s.selection.edges.length === 0 ? s.selection.nodes[0] : undefined));
  const { inspectorRequest } = useEditorUi();
  const [tab, setTab] = useState<SideTab>("document");
  // Kept here, above the switch between the live and the plain canvas, so that stopping the
  // deployment (which unmounts the live subtree) does not lose the result it reports.
  const [stopResult, setStopResult] = useState<string | null>(null);
  // Selecting a node (or asking for one) shows it in the inspector.
  useEffect(() => {
    if (single !== undefined) setTab("inspector");
  }, [single]);
  useEffect(() => {
    if (inspectorRequest) setTab("inspector");
  }, [inspectorRequest]);

  const tabs: { id: SideTab; label: string; render: () => ReactNode }[] = [
    {
      id: "inspector",
      label: "Inspector",
      render: () => (
        <ParamEditorsContext.Provider value={expressionParamEditors}>
          <Inspector />
        </ParamEditorsContext.Provider>
      ),
    },
    { id: "document", label: "Document", render: () => <DocumentPanel document={shownDoc} title={title} /> },
    ...(tools
      ? [
          { id: "history" as const, label: "History", render: () => <VersionHistory /> },
          { id: "dryrun" as const, label: "Dry run", render: () => <DryRunPanel /> },
          { id: "operations" as const, label: "Operations", render: () => <OperationsPanel pipeline={tools.pipeline} stopResult={stopResult} onStopped={setStopResult} /> },
          { id: "audit" as const, label: "Audit", render: () => <PipelineAuditTab pipeline={tools.pipeline} /> },
        ]
      : []),
  ];
  const current = tabs.find((t) => t.id === tab) ?? tabs[0];

  const area = (
    <>
      {paletteHost ? createPortal(<Palette operators={operators} />, paletteHost) : null}
      <main className="kf-main">
        <EditorToolbar {...(onBackToDraft ? { onBackToDraft } : {})} />
        <div className="kf-main__canvas">
          <EditorCanvas />
        </div>
        <ProblemsPanel />
      </main>
      <section className="kf-panel" aria-label="Side panel">
        <div className="kf-tabs" role="tablist" aria-label="Side panel">
          {tabs.map((t) => (
            <button key={t.id} type="button" role="tab" aria-selected={t.id === current?.id} className="kf-tabs__tab" data-testid={`tab-${t.id}`} onClick={() => setTab(t.id)}>
              {t.label}
            </button>
          ))}
        </div>
        <div className="kf-panel__content" role="tabpanel">
          {current?.render()}
        </div>
      </section>
      <EditorDialogs />
    </>
  );
  if (!tools) return area;
  // A running deployment turns the canvas into its dashboard (live figures on nodes and edges).
  const running = runningDeployment(tools.pipeline);
  return (
    <PipelineToolsProvider pipeline={tools.pipeline} document={shownDoc} shown={tools.shown} onOpenVersion={tools.onOpenVersion} onSelectPipeline={tools.onSelectPipeline} onShowPanel={setTab}>
      {running ? (
        <LiveProvider key={running.id} deploymentId={running.id} document={doc}>
          {area}
        </LiveProvider>
      ) : (
        area
      )}
    </PipelineToolsProvider>
  );
}

// ---- New pipeline -------------------------------------------------------------------------------

const NAME_RULE = pipelineDocumentSchema.shape.name;

function suggestName(pipelines: readonly PipelineSummary[] | undefined): string {
  const taken = new Set(pipelines?.map((p) => p.name));
  for (let i = 1; ; i++) {
    const name = i === 1 ? "new-pipeline" : `new-pipeline-${i}`;
    if (!taken.has(name)) return name;
  }
}

/** "New pipeline": a name (it names Kafka topics, so letters, digits, `.`, `_`, `-`), then an empty canvas. */
function NewPipeline({ pipelines, onCreated }: { pipelines: readonly PipelineSummary[] | undefined; onCreated: (id: string) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const create = useMutation(trpc.pipeline.create.mutationOptions());
  const [name, setName] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (name === null) return;
    const checked = NAME_RULE.safeParse(name.trim());
    if (!checked.success) {
      setError(checked.error.issues[0]?.message ?? "invalid name");
      return;
    }
    try {
      const created = await create.mutateAsync({ name: checked.data });
      await queryClient.invalidateQueries({ queryKey: trpc.pipeline.list.queryKey() });
      setName(null);
      setError(null);
      onCreated(created.id);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  };

  if (name === null) {
    return (
      <div className="kf-newpipeline kf-newpipeline--main">
        <button type="button" className="kf-button kf-button--primary kf-button--block" data-testid="new-pipeline" onClick={() => setName(suggestName(pipelines))}>
          + New pipeline
        </button>
      </div>
    );
  }
  return (
    <form className="kf-newpipeline kf-newpipeline--form" onSubmit={(e) => void submit(e)} data-testid="new-pipeline-form">
      <label className="kf-field__label" htmlFor="kf-new-pipeline-name">
        Name <span className="kf-field__name">(names its Kafka topics)</span>
      </label>
      <input
        id="kf-new-pipeline-name"
        className="kf-input kf-input--mono"
        autoFocus
        value={name}
        data-testid="new-pipeline-name"
        onFocus={(e) => e.currentTarget.select()}
        onChange={(e) => {
          setName(e.target.value);
          setError(null);
        }}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            setName(null);
            setError(null);
          }
        }}
      />
      {error ? (
        <p className="kf-field__issue kf-field__issue--error" data-testid="new-pipeline-error">
          {error}
        </p>
      ) : null}
      <div className="kf-newpipeline__actions">
        <button type="button" className="kf-button kf-button--small" onClick={() => setName(null)}>
          Cancel
        </button>
        <button type="submit" className="kf-button kf-button--small kf-button--primary" disabled={create.isPending} data-testid="new-pipeline-create">
          {create.isPending ? "Creating…" : "Create"}
        </button>
      </div>
    </form>
  );
}

function VersionMeta({ pipeline, shown }: { pipeline: PipelineDetail; shown: Shown }) {
  if (shown.kind === "draft") {
    const newest = pipeline.versions[0];
    return (
      <span className="kf-topbar__meta">
        working copy · changed {formatTime(pipeline.updatedAt)}
        {newest ? ` · newest version v${newest.number}` : " · no version yet"}
      </span>
    );
  }
  const version = pipeline.versions.find((v) => v.number === shown.number);
  if (!version) return null;
  return (
    <span className="kf-topbar__meta" data-testid="version-meta">
      saved by {version.author} · {formatTime(version.createdAt)} · <code title={version.graphHash}>{version.graphHash.slice(0, 10)}</code>
    </span>
  );
}
