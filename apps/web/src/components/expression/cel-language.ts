// The CEL expression language for Monaco, framework-free (no monaco import at run time, so it is
// unit-tested in Node): the Monarch tokenizer, what completion offers, and the markers from the
// engine's own checker (`checkExpression`, the parser the runner compiles with), with line and
// column. components/expression/monaco-cel.ts registers these with Monaco.
import { checkExpression, type ExpressionDiagnostic } from "@keyflow/operators";
import type { languages } from "monaco-editor";

export const CEL_LANGUAGE_ID = "cel";

// ---- Tokens ------------------------------------------------------------------------------------

export const CEL_KEYWORDS = ["true", "false", "null", "in"] as const;
/** Reserved by the CEL spec: an error as an identifier. */
export const CEL_RESERVED = ["as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"] as const;

/** Functions and macros, with a one-line description and the snippet completion inserts. */
export const CEL_FUNCTIONS: readonly { name: string; detail: string; snippet: string; method: boolean; global: boolean }[] = [
  { name: "has", detail: "has(a.b): the field b is set on a", snippet: "has(${1:record.field})", method: false, global: true },
  { name: "size", detail: "size(x): length of a string, list or map", snippet: "size(${1})", method: true, global: true },
  { name: "int", detail: "int(x): convert to an integer", snippet: "int(${1})", method: false, global: true },
  { name: "uint", detail: "uint(x): convert to an unsigned integer", snippet: "uint(${1})", method: false, global: true },
  { name: "double", detail: "double(x): convert to a double", snippet: "double(${1})", method: false, global: true },
  { name: "string", detail: "string(x): convert to a string", snippet: "string(${1})", method: false, global: true },
  { name: "bool", detail: "bool(x): convert to a bool", snippet: "bool(${1})", method: false, global: true },
  { name: "timestamp", detail: "timestamp(\"2026-01-01T00:00:00Z\"): a point in time", snippet: "timestamp(${1})", method: false, global: true },
  { name: "duration", detail: "duration(\"10m\"): a length of time", snippet: "duration(\"${1:10m}\")", method: false, global: true },
  { name: "type", detail: "type(x): the type of a value", snippet: "type(${1})", method: false, global: true },
  { name: "dyn", detail: "dyn(x): treat a value as dynamically typed", snippet: "dyn(${1})", method: false, global: true },
  { name: "matches", detail: "s.matches(re): the string matches the regular expression", snippet: "matches(\"${1:^[A-Z]{2}$}\")", method: true, global: true },
  { name: "contains", detail: "s.contains(t): the string contains t", snippet: "contains(\"${1}\")", method: true, global: false },
  { name: "startsWith", detail: "s.startsWith(t)", snippet: "startsWith(\"${1}\")", method: true, global: false },
  { name: "endsWith", detail: "s.endsWith(t)", snippet: "endsWith(\"${1}\")", method: true, global: false },
  { name: "lowerAscii", detail: "s.lowerAscii()", snippet: "lowerAscii()", method: true, global: false },
  { name: "upperAscii", detail: "s.upperAscii()", snippet: "upperAscii()", method: true, global: false },
  { name: "all", detail: "list.all(x, pred): every element satisfies pred", snippet: "all(${1:x}, ${2:x > 0})", method: true, global: false },
  { name: "exists", detail: "list.exists(x, pred): some element satisfies pred", snippet: "exists(${1:x}, ${2:x > 0})", method: true, global: false },
  { name: "exists_one", detail: "list.exists_one(x, pred): exactly one element satisfies pred", snippet: "exists_one(${1:x}, ${2:x > 0})", method: true, global: false },
  { name: "map", detail: "list.map(x, expr): each element transformed", snippet: "map(${1:x}, ${2:x})", method: true, global: false },
  { name: "filter", detail: "list.filter(x, pred): the elements that satisfy pred", snippet: "filter(${1:x}, ${2:x > 0})", method: true, global: false },
];

/**
 * Monarch tokenizer: keywords, reserved words, operators, strings (quoted, triple-quoted, raw and
 * bytes), numbers (int, uint, double, hex), record fields (identifiers at the root: `amount`) and
 * member fields (`merchant.risk`), functions (an identifier followed by `(`).
 */
export const celMonarch = {
  defaultToken: "invalid",
  tokenPostfix: ".cel",
  keywords: [...CEL_KEYWORDS],
  reserved: [...CEL_RESERVED],
  functions: CEL_FUNCTIONS.map((f) => f.name),
  operators: ["&&", "||", "!", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "?", ":"],
  symbols: /[=><!~?:&|+\-*/%^]+/,
  escapes: /\\(?:[abfnrtv\\"'`?]|x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{3})/,
  tokenizer: {
    root: [
      [/[ \t\r\n]+/, "white"],
      [/\/\/.*$/, "comment"],
      // strings: raw / bytes prefixes, triple quotes, then single-line quotes
      [/[rR][bB]?"""/, { token: "string.quote", next: "@rawTriple" }],
      [/[bB]?[rR]?"""/, { token: "string.quote", next: "@tripleDouble" }],
      [/[bB]?[rR]?'''/, { token: "string.quote", next: "@tripleSingle" }],
      [/[rR][bB]?"/, { token: "string.quote", next: "@rawDouble" }],
      [/[rR][bB]?'/, { token: "string.quote", next: "@rawSingle" }],
      [/[bB]?"/, { token: "string.quote", next: "@double" }],
      [/[bB]?'/, { token: "string.quote", next: "@single" }],
      // numbers
      [/0[xX][0-9a-fA-F]+[uU]?/, "number.hex"],
      [/\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+/, "number.float"],
      [/\d+[uU]/, "number"],
      [/\d+/, "number"],
      // a member after a dot: a field of a nested value, or a method
      [/(\.)([A-Za-z_][A-Za-z0-9_]*)(?=\s*\()/, ["delimiter", "predefined"]],
      [/(\.)([A-Za-z_][A-Za-z0-9_]*)/, ["delimiter", "variable.member"]],
      [
        /[A-Za-z_][A-Za-z0-9_]*(?=\s*\()/,
        { cases: { "@functions": "predefined", "@default": "identifier.function" } },
      ],
      [
        /[A-Za-z_][A-Za-z0-9_]*/,
        { cases: { "@keywords": "keyword", "@reserved": "invalid", "@default": "variable" } },
      ],
      [/[()[\]{}]/, "@brackets"],
      [/[,.]/, "delimiter"],
      [/@symbols/, { cases: { "@operators": "operator", "@default": "invalid" } }],
    ],
    double: [
      [/[^\\"]+/, "string"],
      [/@escapes/, "string.escape"],
      [/\\./, "string.escape.invalid"],
      [/"/, { token: "string.quote", next: "@pop" }],
    ],
    single: [
      [/[^\\']+/, "string"],
      [/@escapes/, "string.escape"],
      [/\\./, "string.escape.invalid"],
      [/'/, { token: "string.quote", next: "@pop" }],
    ],
    rawDouble: [
      [/[^"]+/, "string"],
      [/"/, { token: "string.quote", next: "@pop" }],
    ],
    rawSingle: [
      [/[^']+/, "string"],
      [/'/, { token: "string.quote", next: "@pop" }],
    ],
    tripleDouble: [
      [/[^\\"]+/, "string"],
      [/@escapes/, "string.escape"],
      [/"""/, { token: "string.quote", next: "@pop" }],
      [/["\\]/, "string"],
    ],
    tripleSingle: [
      [/[^\\']+/, "string"],
      [/@escapes/, "string.escape"],
      [/'''/, { token: "string.quote", next: "@pop" }],
      [/['\\]/, "string"],
    ],
    rawTriple: [
      [/[^"]+/, "string"],
      [/"""/, { token: "string.quote", next: "@pop" }],
      [/"/, "string"],
    ],
  },
} satisfies languages.IMonarchLanguage;

export const celLanguageConfiguration = {
  comments: { lineComment: "//" },
  brackets: [
    ["(", ")"],
    ["[", "]"],
    ["{", "}"],
  ],
  autoClosingPairs: [
    { open: "(", close: ")" },
    { open: "[", close: "]" },
    { open: "{", close: "}" },
    { open: '"', close: '"', notIn: ["string"] },
    { open: "'", close: "'", notIn: ["string"] },
  ],
  surroundingPairs: [
    { open: "(", close: ")" },
    { open: "[", close: "]" },
    { open: '"', close: '"' },
    { open: "'", close: "'" },
  ],
} satisfies languages.LanguageConfiguration;

// ---- Identifiers in the text ------------------------------------------------------------------

export interface IdentifierSpan {
  name: string;
  /** 0-based offsets. */
  start: number;
  end: number;
  /** Follows a `.`: a member, not a record field. */
  member: boolean;
}

/** A string literal starting at `i` (after its r/b prefixes, if any): where its quote is, and whether it is raw. */
function stringAt(source: string, i: number): { quoteAt: number; raw: boolean } | undefined {
  let j = i;
  if (!/[A-Za-z0-9_]/.test(source[i - 1] ?? "")) {
    while (j < i + 2 && /[rRbB]/.test(source[j] ?? "")) j++;
  }
  const q = source[j];
  if (q !== '"' && q !== "'") return undefined;
  return { quoteAt: j, raw: /[rR]/.test(source.slice(i, j)) };
}

/** The identifiers of an expression, skipping strings and comments (where a field name is only text). */
export function identifierSpans(source: string): IdentifierSpan[] {
  const out: IdentifierSpan[] = [];
  let i = 0;
  let lastSignificant = "";
  while (i < source.length) {
    const ch = source[i] as string;
    if (ch === "/" && source[i + 1] === "/") {
      while (i < source.length && source[i] !== "\n") i++;
      continue;
    }
    // strings, with optional r/b prefixes (`r"\d+"`, `b'abc'`)
    const string = stringAt(source, i);
    if (string) {
      let j = string.quoteAt;
      const quote = source.startsWith('"""', j) ? '"""' : source.startsWith("'''", j) ? "'''" : (source[j] as string);
      j += quote.length;
      while (j < source.length && !source.startsWith(quote, j)) j += !string.raw && source[j] === "\\" ? 2 : 1;
      i = Math.min(source.length, j + quote.length);
      lastSignificant = '"';
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      let j = i + 1;
      while (j < source.length && /[A-Za-z0-9_]/.test(source[j] as string)) j++;
      out.push({ name: source.slice(i, j), start: i, end: j, member: lastSignificant === "." });
      lastSignificant = "a";
      i = j;
      continue;
    }
    if (/\d/.test(ch)) {
      let j = i + 1;
      while (j < source.length && /[0-9a-fA-FxXuU.eE]/.test(source[j] as string)) j++;
      i = j;
      lastSignificant = "0";
      continue;
    }
    if (!/\s/.test(ch)) lastSignificant = ch;
    i++;
  }
  return out;
}

// ---- Markers -----------------------------------------------------------------------------------

/** A Monaco marker, as plain data (severity as a word; the editor maps it to MarkerSeverity). */
export interface CelMarker {
  severity: "error" | "warning";
  code: ExpressionDiagnostic["code"];
  message: string;
  startLineNumber: number;
  startColumn: number;
  endLineNumber: number;
  endColumn: number;
}

function lineColumn(source: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < source.length; i++) {
    if (source.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/**
 * The engine's diagnostics for `source` as markers: syntax errors where the parser stopped (at
 * least one character wide, so they show), unknown fields on every root use of the field.
 */
export function celMarkers(source: string, site: { nodeId: string; param: string }, knownFields?: readonly string[]): CelMarker[] {
  const markers: CelMarker[] = [];
  for (const d of checkExpression(source, site, knownFields)) {
    if (d.span) {
      const start = d.span.start;
      let end = d.span.end;
      if (end.offset <= start.offset) {
        const widened = Math.min(source.length, start.offset + 1);
        end = widened > start.offset ? { offset: widened, ...lineColumn(source, widened) } : end;
      }
      markers.push({ severity: d.severity, code: d.code, message: d.message, startLineNumber: start.line, startColumn: start.column, endLineNumber: end.line, endColumn: Math.max(end.column, end.line === start.line ? start.column + 1 : end.column) });
      continue;
    }
    const uses = identifierSpans(source).filter((s) => !s.member && s.name === d.field);
    if (uses.length === 0) {
      const end = lineColumn(source, source.length);
      markers.push({ severity: d.severity, code: d.code, message: d.message, startLineNumber: 1, startColumn: 1, endLineNumber: end.line, endColumn: end.column });
    }
    for (const use of uses) {
      const s = lineColumn(source, use.start);
      const e = lineColumn(source, use.end);
      markers.push({ severity: d.severity, code: d.code, message: d.message, startLineNumber: s.line, startColumn: s.column, endLineNumber: e.line, endColumn: e.column });
    }
  }
  return markers;
}

// ---- Completion --------------------------------------------------------------------------------

export interface CelCompletion {
  label: string;
  kind: "field" | "keyword" | "function" | "method";
  detail: string;
  /** Text inserted; a snippet when `snippet` is true. */
  insertText: string;
  snippet: boolean;
  /** Fields first, then functions, then keywords. */
  sortText: string;
}

/**
 * What to offer at the cursor, given the text before it on the line: after a `.` the methods and
 * macros; elsewhere the record's fields (`inputFields` of the node, from the source's declared
 * `fields`), the global functions and the keywords. Inside a string, nothing.
 */
export function celCompletions(textBeforeCursor: string, fields: readonly string[] | undefined): CelCompletion[] {
  const quotes = (textBeforeCursor.match(/(?<!\\)"/g) ?? []).length;
  if (quotes % 2 === 1) return [];
  const member = /\.\s*[A-Za-z_0-9]*$/.test(textBeforeCursor);
  if (member) {
    return CEL_FUNCTIONS.filter((f) => f.method).map((f) => ({ label: f.name, kind: "method", detail: f.detail, insertText: f.snippet, snippet: true, sortText: `1${f.name}` }));
  }
  return [
    ...(fields ?? []).map((name): CelCompletion => ({ label: name, kind: "field", detail: "record field", insertText: name, snippet: false, sortText: `0${name}` })),
    ...CEL_FUNCTIONS.filter((f) => f.global).map((f): CelCompletion => ({ label: f.name, kind: "function", detail: f.detail, insertText: f.snippet, snippet: true, sortText: `1${f.name}` })),
    ...CEL_KEYWORDS.map((k): CelCompletion => ({ label: k, kind: "keyword", detail: "keyword", insertText: k, snippet: false, sortText: `2${k}` })),
  ];
}
