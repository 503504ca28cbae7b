"use client";
// The keyboard "connect" command (select a node, press C): every edge that could join it to
// another node, filtered as you type; arrows pick one, Enter connects. Edges the shared validator
// refuses are listed last, greyed, with its reason, so the analyst learns why.
import { useMemo, useState, type KeyboardEvent } from "react";
import { connectOptions, filterConnectOptions, type ConnectOption } from "../../canvas/connect-options";
import { useEditor } from "./EditorContext";
import { Modal } from "./Modal";
import { useToast } from "./Toasts";

export function ConnectDialog({ nodeId }: { nodeId: string }) {
  const { store, lookup, commands } = useEditor();
  const toast = useToast();
  const [query, setQuery] = useState("");
  const [active, setActive] = useState(0);
  const options = useMemo(() => connectOptions(store.getState().doc, nodeId, lookup), [store, nodeId, lookup]);
  const shown = useMemo(() => filterConnectOptions(options, query), [options, query]);
  const choosable = useMemo(() => shown.filter((o) => o.ok), [shown]);
  const current = choosable[Math.min(active, choosable.length - 1)];

  const close = () => {
    commands.closeDialog();
    commands.focusNodeElement(nodeId);
  };
  const choose = (option: ConnectOption | undefined) => {
    if (!option?.ok) return;
    if (commands.connect(option.from, option.to)) toast({ tone: "success", title: "Connected", message: `${option.from} → ${option.to}` });
    close();
  };
  const onKeyDown = (e: KeyboardEvent) => {
    const n = choosable.length;
    if (e.key === "ArrowDown" && n > 0) {
      e.preventDefault();
      setActive((i) => (Math.min(i, n - 1) + 1) % n);
    } else if (e.key === "ArrowUp" && n > 0) {
      e.preventDefault();
      setActive((i) => (Math.min(i, n - 1) - 1 + n) % n);
    } else if (e.key === "Enter") {
      e.preventDefault();
      choose(current);
    }
  };

  return (
    <Modal title={<>Connect <code>{nodeId}</code></>} onClose={close} testId="connect-dialog" wide>
      <div className="kf-modal__body" onKeyDown={onKeyDown}>
        <input
          className="kf-input"
          data-autofocus
          placeholder="Filter: a node, a port (late, errors, reference)…"
          aria-label="Filter connections"
          data-testid="connect-search"
          value={query}
          onChange={(e) => {
            setQuery(e.target.value);
            setActive(0);
          }}
          role="combobox"
          aria-expanded="true"
          aria-controls="kf-connect-options"
          aria-activedescendant={current ? `kf-connect-${current.from}->${current.to}` : undefined}
        />
        <ul className="kf-connect" id="kf-connect-options" role="listbox" aria-label="Connections">
          {shown.length === 0 ? <li className="kf-inspector__hint">{options.length === 0 ? "No other node has a port this one can connect to." : "Nothing matches."}</li> : null}
          {shown.map((o) => {
            const isActive = o === current;
            return (
              <li
                key={`${o.from}->${o.to}`}
                id={`kf-connect-${o.from}->${o.to}`}
                role="option"
                aria-selected={isActive}
                aria-disabled={!o.ok}
                className={`kf-connect__option${o.ok ? "" : " kf-connect__option--refused"}${isActive ? " kf-connect__option--active" : ""}`}
                data-testid={`connect-option-${o.from}->${o.to}`}
                onMouseDown={(e) => e.preventDefault()}
                onClick={() => choose(o)}
              >
                <span className="kf-connect__dir">{o.direction === "out" ? "to" : "from"}</span>
                <span className="kf-connect__edge">
                  <code>{o.from}</code> → <code>{o.to}</code>
                </span>
                <span className="kf-connect__label">{o.ok ? o.label : o.reason}</span>
              </li>
            );
          })}
        </ul>
        <p className="kf-modal__foot">
          <kbd>↑</kbd> <kbd>↓</kbd> choose · <kbd>Enter</kbd> connect · <kbd>Esc</kbd> cancel
        </p>
      </div>
    </Modal>
  );
}
