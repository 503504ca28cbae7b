"use client";
// The operator palette, generated from the catalog: grouped in the palette's sections, searchable,
// each entry's docs on hover (or while it is the highlighted search result). Entries are dragged
// onto the canvas; from the keyboard, `/` focuses the search, arrows pick, Enter adds the
// operator at a free spot and moves focus to it on the canvas.
import { memo, useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import type { OperatorView } from "../../catalog/operator-view";
import { useOptionalEditor } from "../canvas/EditorContext";
import { OPERATOR_DRAG_TYPE } from "./drag";
import { Markdown } from "./Markdown";
import { groupOperators, searchOperators } from "./search";

const SHOW_DOCS_AFTER_MS = 350;
const HIDE_DOCS_AFTER_MS = 150;

interface DocsAnchor {
  type: string;
  top: number;
  left: number;
}

export function Palette({ operators }: { operators: readonly OperatorView[] | undefined }) {
  const editor = useOptionalEditor();
  const disabled = !editor || editor.readOnly;
  const [query, setQuery] = useState("");
  const [active, setActive] = useState(0);
  const [docs, setDocs] = useState<DocsAnchor | null>(null);
  const showTimer = useRef<number | undefined>(undefined);
  const hideTimer = useRef<number | undefined>(undefined);
  const listRef = useRef<HTMLDivElement | null>(null);
  /** An entry is being dragged: no docs until the drag ends (they would cover the canvas). */
  const dragging = useRef(false);
  const ops = useMemo(() => operators ?? [], [operators]);
  const groups = useMemo(() => groupOperators(ops), [ops]);
  const results = useMemo(() => (query.trim() ? searchOperators(ops, query) : null), [ops, query]);
  const byType = useMemo(() => new Map(ops.map((o) => [o.type, o])), [ops]);

  useEffect(() => setActive(0), [query]);
  useEffect(
    () => () => {
      window.clearTimeout(showTimer.current);
      window.clearTimeout(hideTimer.current);
    },
    [],
  );

  const add = useCallback(
    (type: string) => {
      if (!editor || disabled) return;
      editor.commands.addOperator(type, undefined, { focus: true });
    },
    [disabled, editor],
  );

  const anchorFor = (el: HTMLElement, type: string): DocsAnchor => {
    const rect = el.getBoundingClientRect();
    const list = listRef.current?.getBoundingClientRect();
    return { type, top: rect.top, left: (list?.right ?? rect.right) + 8 };
  };

  const showDocs = (el: HTMLElement, type: string, delay = SHOW_DOCS_AFTER_MS) => {
    if (dragging.current) return;
    window.clearTimeout(hideTimer.current);
    window.clearTimeout(showTimer.current);
    const anchor = anchorFor(el, type);
    if (delay === 0 || docs) setDocs(anchor);
    else showTimer.current = window.setTimeout(() => setDocs(anchor), delay);
  };
  const hideDocs = () => {
    window.clearTimeout(showTimer.current);
    hideTimer.current = window.setTimeout(() => setDocs(null), HIDE_DOCS_AFTER_MS);
  };
  const onDragStart = useCallback(() => {
    dragging.current = true;
    window.clearTimeout(showTimer.current);
    window.clearTimeout(hideTimer.current);
    setDocs(null);
  }, []);
  const onDragEnd = useCallback(() => {
    dragging.current = false;
  }, []);

  // Docs open: a press anywhere else closes them (they float over the canvas).
  const open = docs !== null;
  useEffect(() => {
    if (!open) return;
    const onPointerDown = (e: PointerEvent) => {
      const target = e.target instanceof Element ? e.target : null;
      if (target?.closest(".kf-docs, .kf-palette__item")) return;
      window.clearTimeout(showTimer.current);
      setDocs(null);
    };
    document.addEventListener("pointerdown", onPointerDown, true);
    return () => document.removeEventListener("pointerdown", onPointerDown, true);
  }, [open]);

  // The highlighted search result shows its docs, for keyboard users too.
  const activeType = results?.[active]?.type;
  useEffect(() => {
    if (!activeType) return;
    const el = listRef.current?.querySelector<HTMLElement>(`[data-testid="palette-item-${CSS.escape(activeType)}"]`);
    if (!el) return;
    el.scrollIntoView({ block: "nearest" });
    const rect = el.getBoundingClientRect();
    const list = listRef.current?.getBoundingClientRect();
    setDocs({ type: activeType, top: rect.top, left: (list?.right ?? rect.right) + 8 });
  }, [activeType]);

  const onSearchKey = (e: KeyboardEvent<HTMLInputElement>) => {
    const count = results?.length ?? 0;
    if (e.key === "ArrowDown" && count > 0) {
      e.preventDefault();
      setActive((i) => (i + 1) % count);
    } else if (e.key === "ArrowUp" && count > 0) {
      e.preventDefault();
      setActive((i) => (i - 1 + count) % count);
    } else if (e.key === "Enter") {
      e.preventDefault();
      const type = results?.[active]?.type;
      if (type) {
        add(type);
        setQuery("");
        setDocs(null);
      }
    } else if (e.key === "Escape") {
      e.preventDefault();
      setQuery("");
      setDocs(null);
      e.currentTarget.blur();
    }
  };

  const item = (op: OperatorView, index?: number) => (
    <PaletteItem
      key={op.type}
      op={op}
      disabled={disabled}
      active={index !== undefined && index === active}
      onAdd={add}
      onShowDocs={showDocs}
      onHideDocs={hideDocs}
      onDragStart={onDragStart}
      onDragEnd={onDragEnd}
    />
  );

  const docsView = docs ? byType.get(docs.type) : undefined;
  return (
    <nav className={`kf-palette${disabled ? " kf-palette--disabled" : ""}`} aria-label="Operators" data-testid="palette">
      <div className="kf-palette__head">
        <h2 className="kf-list__heading">
          Operators <span className="kf-list__count">{ops.length || ""}</span>
        </h2>
        <div className="kf-palette__search">
          <input
            ref={editor?.paletteSearchRef}
            type="search"
            className="kf-input"
            placeholder="Search operators…"
            aria-label="Search operators (press / to focus)"
            data-testid="palette-search"
            value={query}
            onChange={(e) => setQuery(e.target.value)}
            onKeyDown={onSearchKey}
            onBlur={() => results && setDocs(null)}
            role="combobox"
            aria-expanded={results !== null}
            aria-controls="kf-palette-results"
            aria-activedescendant={activeType ? `kf-palette-${activeType}` : undefined}
          />
          <kbd className="kf-palette__key" aria-hidden="true">
            /
          </kbd>
        </div>
        {disabled ? <p className="kf-palette__note">{editor?.readOnly ? "Saved versions are read-only: switch to the draft to add operators." : "Open a pipeline to add operators."}</p> : null}
      </div>
      <div className="kf-palette__list" ref={listRef} id="kf-palette-results" role="listbox" aria-label="Operators">
        {results ? (
          results.length > 0 ? (
            <div className="kf-palette__results">{results.map((op, i) => item(op, i))}</div>
          ) : (
            <p className="kf-list__note" data-testid="palette-empty">
              No operator matches “{query}”.
            </p>
          )
        ) : (
          groups.map((g) => (
            <section key={g.section.id} className="kf-palette__group" aria-label={g.section.title} data-testid={`palette-group-${g.section.id}`}>
              <h3 className="kf-palette__group-title" title={g.section.description}>
                {g.section.title}
              </h3>
              {g.operators.map((op) => item(op))}
            </section>
          ))
        )}
      </div>
      {docsView && docs ? (
        <PaletteDocs
          op={docsView}
          top={docs.top}
          left={docs.left}
          onEnter={() => window.clearTimeout(hideTimer.current)}
          onLeave={hideDocs}
        />
      ) : null}
    </nav>
  );
}

interface ItemProps {
  op: OperatorView;
  disabled: boolean;
  active: boolean;
  onAdd: (type: string) => void;
  onShowDocs: (el: HTMLElement, type: string, delay?: number) => void;
  onHideDocs: () => void;
  onDragStart: () => void;
  onDragEnd: () => void;
}

const PaletteItem = memo(function PaletteItem({ op, disabled, active, onAdd, onShowDocs, onHideDocs, onDragStart, onDragEnd }: ItemProps) {
  return (
    <div
      id={`kf-palette-${op.type}`}
      role="option"
      aria-selected={active}
      tabIndex={disabled ? -1 : 0}
      className={`kf-palette__item kf-cat-${op.category}${active ? " kf-palette__item--active" : ""}`}
      data-testid={`palette-item-${op.type}`}
      draggable={!disabled}
      onDragStart={(e) => {
        onDragStart();
        e.dataTransfer.setData(OPERATOR_DRAG_TYPE, op.type);
        e.dataTransfer.setData("text/plain", op.type);
        e.dataTransfer.effectAllowed = "copy";
      }}
      onDoubleClick={() => onAdd(op.type)}
      onKeyDown={(e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          onAdd(op.type);
        }
      }}
      onDragEnd={onDragEnd}
      onMouseEnter={(e) => onShowDocs(e.currentTarget, op.type)}
      onMouseLeave={onHideDocs}
      // Keyboard focus shows the docs at once; a click's focus leaves that to the hover.
      onFocus={(e) => e.currentTarget.matches(":focus-visible") && onShowDocs(e.currentTarget, op.type, 0)}
      onBlur={onHideDocs}
    >
      <span className="kf-palette__swatch" aria-hidden="true" />
      <span className="kf-palette__text">
        <span className="kf-palette__title">{op.title}</span>
        <span className="kf-palette__summary">{op.summary}</span>
      </span>
      <span className="kf-palette__type">{op.type}</span>
      {!disabled ? (
        <button
          type="button"
          tabIndex={-1}
          className="kf-palette__add"
          title={`Add ${op.title} to the canvas`}
          aria-label={`Add ${op.title}`}
          onClick={(e) => {
            e.stopPropagation();
            onAdd(op.type);
          }}
        >
          +
        </button>
      ) : null}
    </div>
  );
});

const KIND = { stream: "unkeyed", keyed: "keyed", reference: "reference", same: "same as input" } as const;

function PaletteDocs({ op, top, left, onEnter, onLeave }: { op: OperatorView; top: number; left: number; onEnter: () => void; onLeave: () => void }) {
  // Beside the entry, but never past the bottom of the window (the panel is at most 70vh / 560 px).
  const height = typeof window === "undefined" ? 560 : Math.min(560, window.innerHeight * 0.7);
  const maxTop = typeof window === "undefined" ? top : Math.max(8, Math.min(top - 12, window.innerHeight - height - 12));
  return (
    <aside className={`kf-docs kf-cat-${op.category}`} style={{ top: maxTop, left }} data-testid="palette-docs" onMouseEnter={onEnter} onMouseLeave={onLeave} role="tooltip">
      <header className="kf-docs__head">
        <span className="kf-node__category">{op.category}</span>
        <strong className="kf-docs__title">{op.title}</strong>
        <code className="kf-docs__type">{op.type}</code>
      </header>
      <p className="kf-docs__summary">{op.summary}</p>
      <dl className="kf-docs__ports">
        {op.inputs.length > 0 ? (
          <div>
            <dt>In</dt>
            <dd>
              {op.inputs.map((p) => (
                <span key={p.id} className="kf-docs__port" title={p.description}>
                  <code>{p.id}</code> {p.accepts.map((k) => KIND[k]).join("/")}
                </span>
              ))}
            </dd>
          </div>
        ) : null}
        {op.outputs.length > 0 ? (
          <div>
            <dt>Out</dt>
            <dd>
              {op.outputs.map((p) => (
                <span key={p.id} className={`kf-docs__port${p.side ? " kf-docs__port--side" : ""}`} title={p.description}>
                  <code>{p.id}</code> {KIND[p.kind]}
                </span>
              ))}
            </dd>
          </div>
        ) : null}
      </dl>
      <Markdown source={op.docs} className="kf-docs__body" />
      {op.stateful ? <p className="kf-docs__foot">Stateful: keeps keyed state or timers, checkpointed.</p> : null}
    </aside>
  );
}
