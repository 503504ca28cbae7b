// The editor's state for one document: the document with its undo history, and the selection.
// Framework-free (React reads it through useSyncExternalStore, see components/canvas/EditorContext);
// every edit goes through `edit`, so undo, autosave and validation see each change exactly once.
//
// The selection is not part of the document and not undone, but an undo that removes a node
// also drops it from the selection.
import type { XYPosition } from "@xyflow/react";
import { edgeId } from "./flow";
import { copyNodes, pasteClipboard, type Clipboard, type Doc } from "./graph-edit";
import { initHistory, record, redo, replacePresent, undo, type History } from "./history";

export interface Selection {
  readonly nodes: readonly string[];
  /** React Flow edge ids (`from->to`). */
  readonly edges: readonly string[];
}

export const EMPTY_SELECTION: Selection = { nodes: [], edges: [] };

export interface EditorState {
  readonly doc: Doc;
  readonly selection: Selection;
  readonly canUndo: boolean;
  readonly canRedo: boolean;
  /** Grows with every change of the document (edit, undo, redo, replace): what autosave watches. */
  readonly revision: number;
  readonly readOnly: boolean;
}

export interface EditOptions {
  /** Consecutive edits of one group coalesce into one undo step (see history.ts). */
  group?: string;
  /** The selection after the edit (e.g. the node just added). Default: the current one, pruned. */
  select?: Selection;
}

/** How far each successive paste of the same clipboard lands from the last one. */
export const PASTE_OFFSET = 40;

const sameIds = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((id, i) => id === b[i]);

export class EditorStore {
  private history: History<Doc>;
  private state: EditorState;
  private readonly listeners = new Set<() => void>();
  private readonly now: () => number;
  private lastPaste: { clip: Clipboard; count: number } | undefined;

  constructor(doc: Doc, opts: { readOnly?: boolean; now?: () => number } = {}) {
    this.history = initHistory(doc);
    this.now = opts.now ?? Date.now;
    this.state = { doc, selection: EMPTY_SELECTION, canUndo: false, canRedo: false, revision: 0, readOnly: opts.readOnly ?? false };
  }

  getState = (): EditorState => this.state;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  private emit(next: Partial<EditorState>): void {
    this.state = { ...this.state, ...next };
    for (const listener of this.listeners) listener();
  }

  private prune(selection: Selection, doc: Doc): Selection {
    const nodes = new Set(doc.nodes.map((n) => n.id));
    const edges = new Set(doc.edges.map((e) => edgeId(e.from, e.to)));
    const pruned = { nodes: selection.nodes.filter((id) => nodes.has(id)), edges: selection.edges.filter((id) => edges.has(id)) };
    return sameIds(pruned.nodes, selection.nodes) && sameIds(pruned.edges, selection.edges) ? selection : pruned;
  }

  private commit(history: History<Doc>, select?: Selection): void {
    this.history = history;
    const doc = history.present;
    this.emit({
      doc,
      selection: this.prune(select ?? this.state.selection, doc),
      canUndo: history.past.length > 0,
      canRedo: history.future.length > 0,
      revision: doc === this.state.doc ? this.state.revision : this.state.revision + 1,
    });
  }

  /** Applies an edit; false when read-only or when it changed nothing. */
  edit(change: (doc: Doc) => Doc, opts: EditOptions = {}): boolean {
    if (this.state.readOnly) return false;
    const next = change(this.state.doc);
    if (next === this.state.doc) {
      if (opts.select) this.select(opts.select);
      return false;
    }
    this.commit(record(this.history, next, { now: this.now(), ...(opts.group !== undefined ? { group: opts.group } : {}) }), opts.select);
    return true;
  }

  /** Replaces the document without an undo step (the first layout of a loaded document). */
  replace(doc: Doc): void {
    if (doc === this.state.doc) return;
    this.commit(replacePresent(this.history, doc));
  }

  undo(): boolean {
    if (this.state.readOnly || this.history.past.length === 0) return false;
    this.commit(undo(this.history));
    return true;
  }

  redo(): boolean {
    if (this.state.readOnly || this.history.future.length === 0) return false;
    this.commit(redo(this.history));
    return true;
  }

  select(selection: Selection): void {
    const current = this.state.selection;
    if (sameIds(current.nodes, selection.nodes) && sameIds(current.edges, selection.edges)) return;
    this.emit({ selection: this.prune(selection, this.state.doc) });
  }

  /** The selected nodes and the edges between them; undefined when no node is selected. */
  copy(): Clipboard | undefined {
    return copyNodes(this.state.doc, this.state.selection.nodes);
  }

  /** Pastes the clipboard's nodes under new ids, offset from the copies (further for each paste), and selects them. */
  paste(clip: Clipboard): string[] {
    if (this.state.readOnly || clip.nodes.length === 0) return [];
    const count = this.lastPaste?.clip === clip ? this.lastPaste.count + 1 : 1;
    const offset: XYPosition = { x: PASTE_OFFSET * count, y: PASTE_OFFSET * count };
    const { doc, nodeIds } = pasteClipboard(this.state.doc, clip, offset);
    this.lastPaste = { clip, count };
    this.edit(() => doc, { select: { nodes: nodeIds, edges: [] } });
    return nodeIds;
  }
}
