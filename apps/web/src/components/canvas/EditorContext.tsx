"use client";
// One pipeline document being edited (the draft) or looked at (a saved version, read-only), shared
// by everything around the canvas: the palette adds to it, the inspector edits its params, the
// problems panel lists what the validator finds in it, the toolbar undoes and saves it.
//
// - The document and its history live in an EditorStore (src/canvas/store.ts); components read
//   slices of it with useEditorState(selector).
// - The shared validator runs on the document as it changes, debounced (useValidation()).
// - Drafts autosave through `pipeline.saveDraft`, debounced, and once more when the page hides.
// - Commands (useEditorCommands()) are what buttons and keyboard shortcuts call; they need the
//   React Flow instance, so the provider includes a ReactFlowProvider.
import { ReactFlowProvider, useReactFlow, type XYPosition } from "@xyflow/react";
import { createTRPCClient, httpLink } from "@trpc/client";
import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  useSyncExternalStore,
  type MutableRefObject,
  type ReactNode,
} from "react";
import superjson from "superjson";
import { resolvePortKinds, validatePipeline, type Issue, type PipelineDocument, type PortKinds } from "@keyflow/operators";
import type { OperatorView } from "../../catalog/operator-view";
import { documentToFlow, edgeId, missingPositions, type CatalogLookup, type OperatorFlowNode } from "../../canvas/flow";
import { addNode, connect as connectEdge, findFreePosition, moveNodes, nodeIdBase, removeElements, uniqueNodeId, type Clipboard, type Rect } from "../../canvas/graph-edit";
import { issueCounts, issuesByNode, sortIssues, type NodeIssues } from "../../canvas/issues";
import { layoutGraph, NODE_WIDTH } from "../../canvas/layout";
import { EditorStore, type EditorState, type Selection } from "../../canvas/store";
import type { AppRouter } from "../../server/root";
import { useTRPCClient } from "../../trpc/react";
import { useToast } from "./Toasts";

export type EditorMode = { kind: "draft" } | { kind: "version"; number: number };

export type EditorDialog = { kind: "connect"; nodeId: string } | { kind: "shortcuts" } | { kind: "save-version" } | null;

/** Asks the side panel to show the inspector, optionally focusing one param's field. */
export interface InspectorRequest {
  nodeId: string;
  param?: string;
  seq: number;
}

export interface EditorCommands {
  /** Adds an operator at `at` (flow coordinates) or, without it, at a free spot in view. */
  addOperator(type: string, at?: XYPosition, opts?: { focus?: boolean }): string | undefined;
  /** Adds the edge `from -> to` (document edge ends) when the validator's canConnect allows it. */
  connect(from: string, to: string): boolean;
  deleteSelection(): void;
  copy(): void;
  cut(): void;
  paste(): void;
  duplicate(): void;
  selectAll(): void;
  clearSelection(): void;
  undo(): void;
  redo(): void;
  autoLayout(): Promise<void>;
  fitView(): void;
  /** Selects a node, zooms to it and shows it in the inspector (optionally one of its params). */
  focusNode(nodeId: string, opts?: { param?: string }): void;
  /** Brings an issue's node (or edge) into view and selects it. */
  showIssue(issue: Issue): void;
  /** The keyboard "connect" command for the selected node. */
  openConnect(): void;
  openDialog(dialog: EditorDialog): void;
  closeDialog(): void;
  focusPaletteSearch(): void;
  /** Moves keyboard focus to a node on the canvas (so shortcuts act on it). */
  focusNodeElement(nodeId: string): void;
  /** Moves keyboard focus into the inspector's first field. */
  focusInspector(): void;
}

export interface Validation {
  /** The document these results are for (validation trails the document by VALIDATE_DEBOUNCE_MS). */
  doc: PipelineDocument;
  issues: Issue[];
  pinned: ReadonlyMap<string, NodeIssues>;
  portKinds: PortKinds;
  inputFields: Record<string, readonly string[]>;
  counts: { errors: number; warnings: number };
}

export type AutosaveStatus = { state: "saved"; at: Date | null } | { state: "pending" } | { state: "saving" } | { state: "error"; message: string } | { state: "off" };

interface EditorContextValue {
  store: EditorStore;
  operators: readonly OperatorView[];
  viewOf: (type: string) => OperatorView | undefined;
  lookup: CatalogLookup;
  pipeline: { id: string; name: string };
  mode: EditorMode;
  readOnly: boolean;
  commands: EditorCommands;
  canvasRef: MutableRefObject<HTMLDivElement | null>;
  paletteSearchRef: MutableRefObject<HTMLInputElement | null>;
  inspectorRef: MutableRefObject<HTMLElement | null>;
  /** After a version is saved: the draft is stored as that version, so nothing is left to autosave. */
  markSaved: (doc: PipelineDocument) => void;
}

interface EditorUiValue {
  dialog: EditorDialog;
  inspectorRequest: InspectorRequest | null;
  /** False until a document without positions has been laid out. */
  ready: boolean;
}

const EditorContext = createContext<EditorContextValue | null>(null);
/** How deep an editor is nested (a saved version opens inside the draft's editor). */
const DepthContext = createContext(0);
/** The editors on the page by depth: only the innermost one answers the keyboard. */
const mountedDepths = new Map<EditorStore, number>();
const ValidationContext = createContext<Validation | null>(null);
const UiContext = createContext<EditorUiValue>({ dialog: null, inspectorRequest: null, ready: false });
const AutosaveContext = createContext<{ status: AutosaveStatus; retry: () => void }>({ status: { state: "off" }, retry: () => undefined });

export function useEditor(): EditorContextValue {
  const value = useContext(EditorContext);
  if (!value) throw new Error("useEditor: no EditorProvider above this component");
  return value;
}

/** The editor, or null outside an EditorProvider (panels that also render without a pipeline). */
export function useOptionalEditor(): EditorContextValue | null {
  return useContext(EditorContext);
}

export function useEditorState<T>(selector: (state: EditorState) => T): T {
  const { store } = useEditor();
  return useSyncExternalStore(
    store.subscribe,
    () => selector(store.getState()),
    () => selector(store.getState()),
  );
}

export function useEditorCommands(): EditorCommands {
  return useEditor().commands;
}

export function useValidation(): Validation {
  const value = useContext(ValidationContext);
  if (!value) throw new Error("useValidation: no EditorProvider above this component");
  return value;
}

export function useEditorUi(): EditorUiValue {
  return useContext(UiContext);
}

export function useAutosave(): { status: AutosaveStatus; retry: () => void } {
  return useContext(AutosaveContext);
}

/**
 * Whether the document may be saved as a version or deployed: not while the validator finds
 * errors. `reason` says why not, for the disabled button's title and the toolbar.
 */
export function useEditorVerdict(): { errors: number; warnings: number; blocked: boolean; reason?: string } {
  const { counts, issues } = useValidation();
  if (counts.errors === 0) return { ...counts, blocked: false };
  const first = issues.find((i) => i.severity === "error");
  return {
    ...counts,
    blocked: true,
    reason: `Fix ${counts.errors} error${counts.errors === 1 ? "" : "s"} first${first ? ` — ${first.message}` : ""}`,
  };
}

// ---- Validation -------------------------------------------------------------------------------

export const VALIDATE_DEBOUNCE_MS = 150;

function validate(doc: PipelineDocument, previous?: Validation): Validation {
  const result = validatePipeline(doc);
  const issues = sortIssues(result.issues);
  const portKinds = resolvePortKinds(doc);
  // Same findings as before (a node was only moved): keep the old objects, nothing re-renders.
  if (previous && JSON.stringify(previous.issues) === JSON.stringify(issues) && JSON.stringify(previous.portKinds) === JSON.stringify(portKinds)) {
    return JSON.stringify(previous.inputFields) === JSON.stringify(result.inputFields) ? { ...previous, doc } : { ...previous, doc, inputFields: result.inputFields };
  }
  return { doc, issues, pinned: issuesByNode(issues), portKinds, inputFields: result.inputFields, counts: issueCounts(issues) };
}

function useDebouncedValidation(store: EditorStore): Validation {
  const doc = useSyncExternalStore(store.subscribe, () => store.getState().doc, () => store.getState().doc);
  const [validation, setValidation] = useState(() => validate(doc));
  useEffect(() => {
    if (validation.doc === doc) return;
    const timer = window.setTimeout(() => setValidation((prev) => validate(doc, prev)), VALIDATE_DEBOUNCE_MS);
    return () => window.clearTimeout(timer);
  }, [doc, validation.doc]);
  return validation;
}

// ---- Autosave ---------------------------------------------------------------------------------

export const AUTOSAVE_DEBOUNCE_MS = 800;

let keepaliveClient: ReturnType<typeof createTRPCClient<AppRouter>> | undefined;
/** A client whose requests outlive the page (fetch keepalive), for the last save when it hides. */
function keepalive() {
  keepaliveClient ??= createTRPCClient<AppRouter>({
    links: [httpLink({ url: "/api/trpc", transformer: superjson, headers: { "x-keyflow-csrf": "1" }, fetch: (url, init) => fetch(url, { ...(init as RequestInit), keepalive: true }) })],
  });
  return keepaliveClient;
}

function useDraftAutosave(store: EditorStore, pipelineId: string, enabled: boolean) {
  const client = useTRPCClient();
  const [status, setStatus] = useState<AutosaveStatus>(enabled ? { state: "saved", at: null } : { state: "off" });
  const saved = useRef<PipelineDocument>(store.getState().doc);
  const inflight = useRef<Promise<void> | null>(null);
  const timer = useRef<number | undefined>(undefined);

  const save = useCallback(async (): Promise<void> => {
    window.clearTimeout(timer.current);
    if (inflight.current) await inflight.current;
    const doc = store.getState().doc;
    if (doc === saved.current) return;
    setStatus({ state: "saving" });
    const attempt = client.pipeline.saveDraft
      .mutate({ pipelineId, graph: doc })
      .then(() => {
        saved.current = doc;
        setStatus(store.getState().doc === doc ? { state: "saved", at: new Date() } : { state: "pending" });
      })
      .catch((error: unknown) => setStatus({ state: "error", message: error instanceof Error ? error.message : String(error) }));
    inflight.current = attempt.finally(() => {
      inflight.current = null;
    });
    await inflight.current;
    if (store.getState().doc !== saved.current && store.getState().doc !== doc) timer.current = window.setTimeout(() => void save(), AUTOSAVE_DEBOUNCE_MS);
  }, [client, pipelineId, store]);

  useEffect(() => {
    if (!enabled) return;
    const unsubscribe = store.subscribe(() => {
      if (store.getState().doc === saved.current) return;
      setStatus((s) => (s.state === "pending" ? s : { state: "pending" }));
      window.clearTimeout(timer.current);
      timer.current = window.setTimeout(() => void save(), AUTOSAVE_DEBOUNCE_MS);
    });
    const onHide = () => {
      const doc = store.getState().doc;
      if (doc === saved.current) return;
      window.clearTimeout(timer.current);
      saved.current = doc;
      void keepalive().pipeline.saveDraft.mutate({ pipelineId, graph: doc }).catch(() => undefined);
    };
    window.addEventListener("pagehide", onHide);
    return () => {
      unsubscribe();
      window.removeEventListener("pagehide", onHide);
      // Leaving this pipeline (another one selected): save what is left at once.
      if (store.getState().doc !== saved.current) void save();
    };
  }, [enabled, pipelineId, save, store]);

  const markSaved = useCallback(
    (doc: PipelineDocument) => {
      saved.current = doc;
      if (store.getState().doc === doc) {
        window.clearTimeout(timer.current);
        setStatus({ state: "saved", at: new Date() });
      }
    },
    [store],
  );
  const retry = useCallback(() => void save(), [save]);
  return { status, markSaved, retry };
}

// ---- Clipboard --------------------------------------------------------------------------------

/** Copied nodes, shared by every pipeline of the page (copy in one, paste in another). */
let clipboard: Clipboard | undefined;

// ---- The provider -----------------------------------------------------------------------------

export interface EditorProviderProps {
  pipeline: { id: string; name: string };
  document: PipelineDocument;
  operators: readonly OperatorView[];
  mode: EditorMode;
  children: ReactNode;
}

export function EditorProvider(props: EditorProviderProps) {
  return (
    <ReactFlowProvider>
      <EditorProviderInner {...props} />
    </ReactFlowProvider>
  );
}

const isEditable = (el: EventTarget | null): boolean => {
  if (!(el instanceof HTMLElement)) return false;
  if (el.isContentEditable) return true;
  if (el.closest(".monaco-editor")) return true;
  return el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement;
};

function EditorProviderInner({ pipeline, document: initial, operators, mode, children }: EditorProviderProps) {
  const readOnly = mode.kind !== "draft";
  const depth = useContext(DepthContext) + 1;
  const [store] = useState(() => new EditorStore(initial, { readOnly }));
  const rf = useReactFlow<OperatorFlowNode>();
  const toast = useToast();
  const canvasRef = useRef<HTMLDivElement | null>(null);
  const paletteSearchRef = useRef<HTMLInputElement | null>(null);
  const inspectorRef = useRef<HTMLElement | null>(null);
  const [dialog, setDialog] = useState<EditorDialog>(null);
  const [inspectorRequest, setInspectorRequest] = useState<InspectorRequest | null>(null);
  const [ready, setReady] = useState(() => missingPositions(initial).length === 0);
  const validation = useDebouncedValidation(store);
  const autosave = useDraftAutosave(store, pipeline.id, !readOnly);
  const { markSaved } = autosave;

  const byType = useMemo(() => new Map(operators.map((op) => [op.type, op])), [operators]);
  const viewOf = useCallback((type: string) => byType.get(type), [byType]);
  const lookup = useMemo<CatalogLookup>(() => (type) => byType.get(type), [byType]);

  // A document saved without positions (made by the API or by hand): lay it out once, as it loads.
  useEffect(() => {
    if (ready) return;
    let cancelled = false;
    const doc = store.getState().doc;
    const flow = documentToFlow(doc, lookup);
    layoutGraph(flow.nodes, flow.edges).then(
      (positions) => {
        if (cancelled) return;
        const placed = moveNodes(doc, positions);
        store.replace(placed);
        markSaved(placed);
        setReady(true);
      },
      (error: unknown) => {
        if (cancelled) return;
        toast({ tone: "error", title: "Auto-layout failed", message: error instanceof Error ? error.message : String(error) });
        setReady(true);
      },
    );
    return () => {
      cancelled = true;
    };
  }, [ready, store, lookup, markSaved, toast]);

  const seq = useRef(0);
  const requestInspector = useCallback((nodeId: string, param?: string) => setInspectorRequest({ nodeId, seq: ++seq.current, ...(param ? { param } : {}) }), []);

  const commands = useMemo<EditorCommands>(() => {
    const refuseReadOnly = (): boolean => {
      if (!readOnly) return false;
      toast({ tone: "info", title: "This version is read-only", message: "Saved versions never change. Switch to the draft to edit." });
      return true;
    };

    const nodeRects = (): Rect[] =>
      rf.getNodes().map((n) => ({ x: n.position.x, y: n.position.y, width: n.measured?.width ?? NODE_WIDTH, height: n.measured?.height ?? 120 }));

    /** A free spot right of the selected node, or in the middle of the view. */
    const freeSpot = (): XYPosition => {
      const rects = nodeRects();
      const selected = store.getState().selection.nodes;
      const anchor = selected.length === 1 ? rf.getNode(selected[0] as string) : undefined;
      let preferred: XYPosition;
      if (anchor) {
        preferred = { x: anchor.position.x + (anchor.measured?.width ?? NODE_WIDTH) + 80, y: anchor.position.y };
      } else {
        const box = canvasRef.current?.getBoundingClientRect();
        const center = box ? rf.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 2 }) : { x: 0, y: 0 };
        preferred = { x: center.x - NODE_WIDTH / 2, y: center.y - 60 };
      }
      return findFreePosition(rects, preferred, { width: NODE_WIDTH, height: 130 });
    };

    /** Pans (keeping the zoom) so that a node is in view. */
    const ensureVisible = (nodeId: string) => {
      requestAnimationFrame(() => {
        const node = rf.getNode(nodeId);
        const box = canvasRef.current?.getBoundingClientRect();
        if (!node || !box) return;
        const topLeft = rf.flowToScreenPosition(node.position);
        const width = (node.measured?.width ?? NODE_WIDTH) * rf.getZoom();
        const height = (node.measured?.height ?? 120) * rf.getZoom();
        const inside = topLeft.x >= box.left && topLeft.y >= box.top && topLeft.x + width <= box.right && topLeft.y + height <= box.bottom;
        if (!inside) void rf.setCenter(node.position.x + (node.measured?.width ?? NODE_WIDTH) / 2, node.position.y + (node.measured?.height ?? 120) / 2, { zoom: rf.getZoom(), duration: 250 });
      });
    };

    const focusNodeElement = (nodeId: string) => {
      // Twice: the node renders in the next frame, React Flow measures it in the one after.
      requestAnimationFrame(() =>
        requestAnimationFrame(() => {
          canvasRef.current?.querySelector<HTMLElement>(`.react-flow__node[data-id="${CSS.escape(nodeId)}"]`)?.focus({ preventScroll: true });
        }),
      );
    };

    const select = (selection: Selection) => store.select(selection);

    const focusNode = (nodeId: string, opts: { param?: string } = {}) => {
      select({ nodes: [nodeId], edges: [] });
      void rf.fitView({ nodes: [{ id: nodeId }], duration: 300, maxZoom: 1.2, padding: 0.6 });
      requestInspector(nodeId, opts.param);
    };

    const copy = (): boolean => {
      const clip = store.copy();
      if (!clip) return false;
      clipboard = clip;
      void navigator.clipboard?.writeText(JSON.stringify(clip, null, 2)).catch(() => undefined);
      return true;
    };

    const deleteSelection = () => {
      if (refuseReadOnly()) return;
      const { nodes, edges } = store.getState().selection;
      store.edit((d) => removeElements(d, { nodes, edges }), { select: { nodes: [], edges: [] } });
    };

    return {
      addOperator(type, at, opts = {}) {
        if (refuseReadOnly()) return undefined;
        const view = byType.get(type);
        if (!view) {
          toast({ tone: "error", title: `Unknown operator "${type}"` });
          return undefined;
        }
        const position = at ?? freeSpot();
        const nodeId = uniqueNodeId(nodeIdBase(type), new Set(store.getState().doc.nodes.map((n) => n.id)));
        store.edit((d) => addNode(d, { type, position, id: nodeId }).doc, { select: { nodes: [nodeId], edges: [] } });
        if (!at) ensureVisible(nodeId);
        if (opts.focus) focusNodeElement(nodeId);
        return nodeId;
      },
      connect(from, to) {
        if (refuseReadOnly()) return false;
        const result = connectEdge(store.getState().doc, from, to);
        if (!result.ok) {
          toast({ tone: "error", title: "Cannot connect", message: result.reason });
          return false;
        }
        store.edit(() => result.doc);
        return true;
      },
      deleteSelection,
      copy() {
        if (!copy()) toast({ tone: "info", title: "Nothing to copy", message: "Select one or more nodes first." });
      },
      cut() {
        if (refuseReadOnly()) return;
        if (copy()) deleteSelection();
      },
      paste() {
        if (refuseReadOnly()) return;
        if (!clipboard) {
          toast({ tone: "info", title: "The clipboard is empty", message: "Copy nodes with Ctrl+C first." });
          return;
        }
        const ids = store.paste(clipboard);
        const first = ids[0];
        if (first) ensureVisible(first);
      },
      duplicate() {
        if (refuseReadOnly()) return;
        const clip = store.copy();
        if (clip) store.paste(clip);
      },
      selectAll() {
        const { doc } = store.getState();
        select({ nodes: doc.nodes.map((n) => n.id), edges: doc.edges.map((e) => edgeId(e.from, e.to)) });
      },
      clearSelection() {
        select({ nodes: [], edges: [] });
      },
      undo() {
        if (!refuseReadOnly()) store.undo();
      },
      redo() {
        if (!refuseReadOnly()) store.redo();
      },
      async autoLayout() {
        if (refuseReadOnly()) return;
        const doc = store.getState().doc;
        if (doc.nodes.length === 0) return;
        const flow = documentToFlow(doc, lookup);
        const positions = await layoutGraph(flow.nodes, flow.edges);
        store.edit((d) => moveNodes(d, positions));
        requestAnimationFrame(() => void rf.fitView({ padding: 0.2, duration: 300, maxZoom: 1.1 }));
      },
      fitView() {
        void rf.fitView({ padding: 0.2, duration: 300, maxZoom: 1.1 });
      },
      focusNode,
      showIssue(issue) {
        if (issue.nodeId !== undefined && store.getState().doc.nodes.some((n) => n.id === issue.nodeId)) {
          focusNode(issue.nodeId, issue.param !== undefined ? { param: issue.param } : {});
          return;
        }
        if (issue.edge !== undefined) {
          const [from, to] = issue.edge.split(" -> ");
          if (from !== undefined && to !== undefined) {
            const id = edgeId(from, to);
            select({ nodes: [], edges: [id] });
            const ends = [from, to].map((end) => ({ id: end.split(":")[0] as string }));
            void rf.fitView({ nodes: ends, duration: 300, maxZoom: 1.2, padding: 0.5 });
          }
        }
      },
      openConnect() {
        if (refuseReadOnly()) return;
        const selected = store.getState().selection.nodes;
        if (selected.length !== 1) {
          toast({ tone: "info", title: "Select one node to connect", message: "Click it or Tab to it, then press C." });
          return;
        }
        setDialog({ kind: "connect", nodeId: selected[0] as string });
      },
      openDialog: setDialog,
      closeDialog: () => setDialog(null),
      focusPaletteSearch() {
        paletteSearchRef.current?.focus();
        paletteSearchRef.current?.select();
      },
      focusNodeElement,
      focusInspector() {
        const selected = store.getState().selection.nodes;
        if (selected.length === 1) requestInspector(selected[0] as string);
        // The inspector may be behind another tab: wait (a few frames) for it to render.
        const editable = "input:not([disabled]), textarea:not([disabled]), select:not([disabled])";
        const attempt = (framesLeft: number) => {
          const root = inspectorRef.current;
          const target = root?.querySelector<HTMLElement>(`[data-testid="inspector-form"] :is(${editable})`) ?? root?.querySelector<HTMLElement>(editable);
          if (target) target.focus();
          else if (framesLeft > 0) requestAnimationFrame(() => attempt(framesLeft - 1));
        };
        requestAnimationFrame(() => attempt(10));
      },
    };
  }, [byType, lookup, readOnly, requestInspector, rf, store, toast]);

  // ---- Keyboard shortcuts (the shortcuts dialog lists them: ShortcutsDialog.tsx) ----
  const dialogRef = useRef(dialog);
  dialogRef.current = dialog;
  useEffect(() => {
    mountedDepths.set(store, depth);
    const onKeyDown = (e: KeyboardEvent) => {
      if (e.defaultPrevented || dialogRef.current || isEditable(e.target)) return;
      // A version opened over the draft: the draft's editor (hidden) must not act on its keys.
      if (Math.max(...mountedDepths.values()) > depth) return;
      const mod = e.ctrlKey || e.metaKey;
      const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
      const run = (action: () => void) => {
        e.preventDefault();
        action();
      };
      if (mod && !e.altKey) {
        // Text selected on the page (docs, messages): let the browser copy it.
        const textSelected = (window.getSelection()?.toString() ?? "") !== "";
        if (key === "z" && !e.shiftKey) return run(commands.undo);
        if ((key === "z" && e.shiftKey) || key === "y") return run(commands.redo);
        if (key === "c" && !textSelected) return run(commands.copy);
        if (key === "x" && !textSelected) return run(commands.cut);
        if (key === "v") return run(commands.paste);
        if (key === "d") return run(commands.duplicate);
        if (key === "a") return run(commands.selectAll);
        return;
      }
      if (e.altKey || mod) return;
      if (e.key === "?") return run(() => setDialog({ kind: "shortcuts" }));
      switch (key) {
        case "Delete":
        case "Backspace":
          return run(commands.deleteSelection);
        case "/":
          return run(commands.focusPaletteSearch);
        case "c":
          return run(commands.openConnect);
        case "f":
          return run(commands.fitView);
        case "l":
          if (e.shiftKey) return run(() => void commands.autoLayout());
          return;
        case "i":
        case "Enter":
          if (store.getState().selection.nodes.length === 1) return run(commands.focusInspector);
          return;
        case "Escape":
          return run(commands.clearSelection);
      }
    };
    window.addEventListener("keydown", onKeyDown);
    return () => {
      window.removeEventListener("keydown", onKeyDown);
      mountedDepths.delete(store);
    };
  }, [commands, store, depth]);

  const value = useMemo<EditorContextValue>(
    () => ({ store, operators, viewOf, lookup, pipeline, mode, readOnly, commands, canvasRef, paletteSearchRef, inspectorRef, markSaved }),
    [store, operators, viewOf, lookup, pipeline, mode, readOnly, commands, markSaved],
  );
  const ui = useMemo<EditorUiValue>(() => ({ dialog, inspectorRequest, ready }), [dialog, inspectorRequest, ready]);
  const saving = useMemo(() => ({ status: autosave.status, retry: autosave.retry }), [autosave.status, autosave.retry]);

  return (
    <DepthContext.Provider value={depth}>
      <EditorContext.Provider value={value}>
        <ValidationContext.Provider value={validation}>
          <UiContext.Provider value={ui}>
            <AutosaveContext.Provider value={saving}>{children}</AutosaveContext.Provider>
          </UiContext.Provider>
        </ValidationContext.Provider>
      </EditorContext.Provider>
    </DepthContext.Provider>
  );
}
