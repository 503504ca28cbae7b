"use client";
// One param of the inspector's form: label, default, description, the control its descriptor
// calls for (fields.ts), and its errors, at once. `ParamField` is the switch from descriptor kind
// to control; a richer editor replaces one kind without touching this file by providing it
// through ParamEditorsContext, e.g. Monaco for expressions:
//
//   <ParamEditorsContext.Provider value={{ cel: CelEditor }}>…</ParamEditorsContext.Provider>
//
// Every control puts `data-testid="param-<key>"` on its input (`param-windowMs`, `param-aggregate.op`).
import { createContext, memo, useContext, useEffect, useId, useRef, useState, type ComponentType, type ReactNode } from "react";
import type { Issue } from "@keyflow/operators";
import { fits } from "../expression/length-guard";
import { InlineMarkdown } from "../palette/Markdown";
import { describeDuration, formatFieldValue, issueText, parseFieldInput, placeholderOf, timeZoneOptions, type FieldDescriptor, type FieldKind } from "./fields";

export interface ParamControlProps {
  field: FieldDescriptor;
  value: unknown;
  /** Stores the value (undefined removes the param, so its default applies). */
  onChange: (value: unknown) => void;
  /** An error the control found in what was typed, shown before the validator runs. */
  onLocalError: (error: string | undefined) => void;
  disabled: boolean;
  /** `param-<key>`: put it on the element that takes the input. */
  testId: string;
  /** The id the label points at. */
  inputId: string;
  nodeId: string;
  operatorType: string;
  /** Fields known on the node's input records (completion for field-name params). */
  inputFields?: readonly string[];
}

/** Controls that replace the built-in one for a kind (the expression helper's Monaco, for one). */
export type ParamEditors = Partial<Record<FieldKind, ComponentType<ParamControlProps>>>;
export const ParamEditorsContext = createContext<ParamEditors>({});

const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);

/**
 * The text of a text-like control: what the analyst types is kept as typed (`1.` on the way to
 * `1.5`), parsed on every keystroke, and replaced only when the value changes from elsewhere
 * (undo, paste).
 */
function useFieldText({ field, value, onChange, onLocalError }: Pick<ParamControlProps, "field" | "value" | "onChange" | "onLocalError">) {
  const [text, setText] = useState(() => formatFieldValue(field, value));
  const committed = useRef<unknown>(value);
  useEffect(() => {
    if (same(value, committed.current)) return;
    committed.current = value;
    setText(formatFieldValue(field, value));
    onLocalError(undefined);
  }, [field, value, onLocalError]);
  const change = (next: string) => {
    // Over the field's length limit (a 5 MB paste): refused with a message, neither shown nor stored.
    if (!fits(field.kind === "cel" ? "expression" : "code", next, onLocalError)) return;
    setText(next);
    const parsed = parseFieldInput(field, next);
    onLocalError(parsed.error);
    // Broken JSON is not stored (it would drop the param); other text is, so the validator sees it.
    if (field.kind === "json" && parsed.error) return;
    committed.current = parsed.value;
    onChange(parsed.value);
  };
  return [text, change] as const;
}

function TextControl(props: ParamControlProps & { multiline?: boolean; rows?: number; mono?: boolean; inputMode?: "decimal" | "numeric" | "text" }) {
  const { field, disabled, testId, inputId, multiline, rows, mono, inputMode, inputFields } = props;
  const [text, change] = useFieldText(props);
  const listId = useId();
  const placeholder = placeholderOf(field);
  const className = `kf-input${mono ? " kf-input--mono" : ""}`;
  if (multiline) {
    return (
      <textarea
        id={inputId}
        className={className}
        rows={rows ?? 3}
        value={text}
        placeholder={placeholder}
        disabled={disabled}
        spellCheck={false}
        data-testid={testId}
        onChange={(e) => change(e.target.value)}
      />
    );
  }
  const completions = field.kind === "field" && inputFields && inputFields.length > 0 ? inputFields : undefined;
  return (
    <>
      <input
        id={inputId}
        className={className}
        type="text"
        inputMode={inputMode}
        value={text}
        placeholder={placeholder}
        disabled={disabled}
        spellCheck={false}
        autoComplete="off"
        list={completions ? listId : undefined}
        data-testid={testId}
        onChange={(e) => change(e.target.value)}
      />
      {completions ? (
        <datalist id={listId}>
          {completions.map((f) => (
            <option key={f} value={f} />
          ))}
        </datalist>
      ) : null}
    </>
  );
}

function DurationControl(props: ParamControlProps) {
  const hint = describeDuration(props.value);
  return (
    <div className="kf-field__with-hint">
      <TextControl {...props} mono />
      {hint ? (
        <span className="kf-field__hint" data-testid={`${props.testId}-hint`}>
          {hint}
        </span>
      ) : null}
    </div>
  );
}

function SelectControl({ field, value, onChange, disabled, testId, inputId, options, emptyLabel }: ParamControlProps & { options: readonly string[]; emptyLabel: string }) {
  const current = typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value);
  const all = current && !options.includes(current) ? [current, ...options] : options;
  return (
    <select id={inputId} className="kf-input kf-select" value={current} disabled={disabled} data-testid={testId} onChange={(e) => onChange(e.target.value === "" ? undefined : e.target.value)}>
      <option value="">{emptyLabel}</option>
      {all.map((o) => (
        <option key={o} value={o}>
          {o}
          {o === field.default ? " (default)" : ""}
        </option>
      ))}
    </select>
  );
}

let zones: string[] | undefined;

function BooleanControl({ field, value, onChange, disabled, testId, inputId }: ParamControlProps) {
  const effective = typeof value === "boolean" ? value : field.default === true;
  return (
    <label className="kf-check">
      <input id={inputId} type="checkbox" checked={effective} disabled={disabled} data-testid={testId} onChange={(e) => onChange(e.target.checked)} />
      <span>{effective ? "Yes" : "No"}</span>
      {value === undefined && field.default !== undefined ? <span className="kf-field__default">default</span> : null}
    </label>
  );
}

/** A record of named values (map's `assignments`): one row per name. */
function MapControl({ field, value, onChange, onLocalError, disabled, testId }: ParamControlProps) {
  const entries = value !== null && typeof value === "object" && !Array.isArray(value) ? Object.entries(value as Record<string, unknown>) : [];
  const write = (next: [string, unknown][]) => onChange(next.length ? Object.fromEntries(next) : undefined);
  const pattern = field.keyPattern ? new RegExp(field.keyPattern) : undefined;
  return (
    <div className="kf-map" data-testid={testId}>
      {entries.map(([name, v], i) => (
        <div key={i} className="kf-map__row">
          <input
            className={`kf-input kf-input--mono${pattern && !pattern.test(name) ? " kf-input--invalid" : ""}`}
            value={name}
            disabled={disabled}
            aria-label={`${field.label}: name ${i + 1}`}
            data-testid={`${testId}-name-${i}`}
            onChange={(e) => write(entries.map((entry, j) => (j === i ? [e.target.value, entry[1]] : entry)))}
          />
          <textarea
            className="kf-input kf-input--mono"
            rows={1}
            value={typeof v === "string" ? v : JSON.stringify(v)}
            disabled={disabled}
            spellCheck={false}
            aria-label={`${field.label}: ${name || `value ${i + 1}`}`}
            data-testid={`${testId}-value-${i}`}
            onChange={(e) => {
              if (!fits(field.valueKind === "cel" ? "expression" : "code", e.target.value, onLocalError)) return;
              write(entries.map((entry, j) => (j === i ? [entry[0], e.target.value] : entry)));
            }}
          />
          <button type="button" className="kf-icon-button" disabled={disabled} aria-label={`Remove ${name}`} onClick={() => write(entries.filter((_, j) => j !== i))}>
            ×
          </button>
        </div>
      ))}
      <button
        type="button"
        className="kf-button kf-button--small"
        disabled={disabled}
        data-testid={`${testId}-add`}
        onClick={() => {
          const taken = new Set(entries.map(([k]) => k));
          // Names that must be digits (partitions) start at 0; others are field names.
          const numbered = pattern?.test("0") === true && !pattern.test("field");
          let name = numbered ? "0" : "field";
          for (let i = numbered ? 1 : 2; taken.has(name); i++) name = numbered ? String(i) : `field${i}`;
          write([...entries, [name, ""]]);
        }}
      >
        + Add {field.valueKind === "cel" ? "expression" : "entry"}
      </button>
    </div>
  );
}

/** Expressions (FORMAT_META_KEY "cel"): a plain textarea, until Monaco replaces it via ParamEditorsContext. */
export function ExpressionField(props: ParamControlProps) {
  return <TextControl {...props} multiline rows={3} mono />;
}

/** The built-in control for a descriptor's kind. Objects are handled by ParamField itself. */
function BuiltInControl(props: ParamControlProps) {
  const { field } = props;
  switch (field.kind) {
    case "duration":
      return <DurationControl {...props} />;
    case "number":
      return <TextControl {...props} inputMode="decimal" mono />;
    case "integer":
      return <TextControl {...props} inputMode="numeric" mono />;
    case "enum":
      return <SelectControl {...props} options={field.options ?? []} emptyLabel={field.default !== undefined ? `Default (${String(field.default)})` : "Choose…"} />;
    case "time-zone":
      zones ??= timeZoneOptions();
      return <SelectControl {...props} options={zones} emptyLabel="Choose a time zone…" />;
    case "boolean":
      return <BooleanControl {...props} />;
    case "const":
      return (
        <output id={props.inputId} className="kf-field__const" data-testid={props.testId}>
          {JSON.stringify(field.constValue)} <span className="kf-field__default">fixed</span>
        </output>
      );
    case "cel":
      return <ExpressionField {...props} />;
    case "code":
      return <TextControl {...props} multiline rows={14} mono />;
    case "string-list":
      return <TextControl {...props} multiline rows={3} mono />;
    case "map":
      return <MapControl {...props} />;
    case "json":
      return <TextControl {...props} multiline rows={4} mono />;
    case "field":
      return <TextControl {...props} mono />;
    default:
      return <TextControl {...props} />;
  }
}

export interface ParamFieldProps {
  field: FieldDescriptor;
  /** The node's params (the whole object: nested fields read their own path). */
  params: Record<string, unknown>;
  onChange: (path: readonly string[], value: unknown) => void;
  /** The node's issues; the field picks its own (issuesFor). */
  issuesFor: (field: FieldDescriptor) => readonly Issue[];
  disabled: boolean;
  nodeId: string;
  operatorType: string;
  inputFields?: readonly string[];
}

function valueAt(params: Record<string, unknown>, path: readonly string[]): unknown {
  let v: unknown = params;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

function FieldShell({ field, issues, localError, children, inputId }: { field: FieldDescriptor; issues: readonly Issue[]; localError?: string; children: ReactNode; inputId: string }) {
  // What was typed is wrong: say that, not the validator's (older) view of it.
  const shown: { severity: string; text: string }[] = localError ? [{ severity: "error", text: localError }] : issues.map((i) => ({ severity: i.severity, text: issueText(i) }));
  const tone = shown.some((s) => s.severity === "error") ? " kf-field--error" : shown.length ? " kf-field--warning" : "";
  return (
    <div className={`kf-field kf-field--${field.kind}${tone}`} data-field={field.key}>
      <div className="kf-field__label-row">
        <label className="kf-field__label" htmlFor={inputId}>
          {field.label}
          {field.required ? (
            <span className="kf-field__required" title="required">
              *
            </span>
          ) : null}
        </label>
        <code className="kf-field__name">{field.key}</code>
      </div>
      {children}
      {shown.map((s, i) => (
        <p key={i} className={`kf-field__issue kf-field__issue--${s.severity}`} data-testid={`param-error-${field.key}`} data-severity={s.severity}>
          {s.text}
        </p>
      ))}
      {field.description ? (
        <p className="kf-field__description">
          <InlineMarkdown text={field.description} />
        </p>
      ) : null}
    </div>
  );
}

function ParamFieldView({ field, params, onChange, issuesFor, disabled, nodeId, operatorType, inputFields }: ParamFieldProps) {
  const editors = useContext(ParamEditorsContext);
  const [localError, setLocalError] = useState<string | undefined>(undefined);
  const inputId = useId();
  const issues = issuesFor(field);
  if (field.kind === "object" && field.fields) {
    const own = issues.filter((i) => i.param === field.key);
    return (
      <fieldset className="kf-fieldset" data-field={field.key}>
        <legend className="kf-field__label">
          {field.label}
          {field.required ? <span className="kf-field__required">*</span> : null} <code className="kf-field__name">{field.key}</code>
        </legend>
        {field.description ? (
          <p className="kf-field__description">
            <InlineMarkdown text={field.description} />
          </p>
        ) : null}
        {own.map((i, n) => (
          <p key={n} className={`kf-field__issue kf-field__issue--${i.severity}`} data-testid={`param-error-${field.key}`}>
            {issueText(i)}
          </p>
        ))}
        {field.fields.map((sub) => (
          <ParamField key={sub.key} field={sub} params={params} onChange={onChange} issuesFor={issuesFor} disabled={disabled} nodeId={nodeId} operatorType={operatorType} {...(inputFields ? { inputFields } : {})} />
        ))}
      </fieldset>
    );
  }
  const Control = editors[field.kind] ?? BuiltInControl;
  return (
    <FieldShell field={field} issues={issues} inputId={inputId} {...(localError ? { localError } : {})}>
      <Control
        field={field}
        value={valueAt(params, field.path)}
        onChange={(value) => onChange(field.path, value)}
        onLocalError={setLocalError}
        disabled={disabled}
        testId={`param-${field.key}`}
        inputId={inputId}
        nodeId={nodeId}
        operatorType={operatorType}
        {...(inputFields ? { inputFields } : {})}
      />
    </FieldShell>
  );
}

export const ParamField = memo(ParamFieldView);
