// Pipeline files: export a document as `keyflow.pipeline/v1` JSON (the format `keyflow run` reads),
// and read an uploaded file back, with the place of a JSON syntax error and the validator's
// verdict, before anything is stored. Framework-free.
import { validatePipeline, type Issue, type PipelineDocument, type PipelineDocumentInput } from "@keyflow/operators";

/** `velocity-check.keyflow.json`. */
export function exportFileName(doc: Pick<PipelineDocumentInput, "name">, suffix?: string): string {
  return `${doc.name}${suffix ? `-${suffix}` : ""}.keyflow.json`;
}

/** The document as a file: `format` first, then the rest in document order, two-space indent, final newline. */
export function serializePipeline(doc: PipelineDocumentInput): string {
  const { format, name, description, settings, nodes, edges, ...rest } = doc;
  const ordered = { format, name, ...(description !== undefined ? { description } : {}), ...(settings !== undefined ? { settings } : {}), nodes, edges: edges ?? [], ...rest };
  return `${JSON.stringify(ordered, null, 2)}\n`;
}

export type ReadPipelineFile =
  | { ok: false; stage: "json"; message: string; line?: number; column?: number }
  | { ok: false; stage: "document"; issues: Issue[]; value: unknown }
  | { ok: true; value: unknown; document: PipelineDocument; issues: Issue[]; errors: number; warnings: number };

/** 1-based line and column of a character offset. */
function position(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  }
  return { line, column: offset - start + 1 };
}

/** The offset and reason of the first JSON syntax error (RFC 8259), or undefined for valid JSON. */
export function firstJsonError(text: string): { offset: number; message: string } | undefined {
  let i = 0;
  const what = (at: number) => (at >= text.length ? "the end of the file" : `'${text[at]}'`);
  const fail = (message: string): never => {
    throw Object.assign(new Error(message), { offset: i });
  };
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i] as string)) i++;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail(`expected a value, found ${what(i)}`);
  };
  const string = () => {
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === "\\") {
        const e = text[i + 1] ?? "";
        if (e === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail("bad \\u escape in a string");
          i += 6;
        } else if ('"\\/bfnrt'.includes(e) && e !== "") i += 2;
        else fail(`bad escape \\${e} in a string`);
      } else if (text.charCodeAt(i) < 0x20) fail("a string may not contain a line break or control character (is a quote missing?)");
      else i++;
    }
    if (i >= text.length) fail("a string is not closed (missing '\"')");
    i++;
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m) fail(`expected a value, found ${what(i)}`);
    i += (m as RegExpExecArray)[0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail(`expected a quoted field name, found ${what(i)}`);
        string();
        ws();
        if (text[i] !== ":") fail(`expected ':' after the field name, found ${what(i)}`);
        i++;
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") return void i++;
        fail(`expected ',' or '}', found ${what(i)}`);
      }
    }
    if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") return void i++;
        fail(`expected ',' or ']', found ${what(i)}`);
      }
    }
    if (c === '"') return string();
    if (c === "t") return literal("true");
    if (c === "f") return literal("false");
    if (c === "n") return literal("null");
    return number();
  };
  try {
    value();
    ws();
    if (i < text.length) fail(`unexpected ${what(i)} after the end of the JSON value`);
    return undefined;
  } catch (e) {
    const offset = (e as { offset?: number }).offset ?? i;
    return { offset, message: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * Reads an uploaded file: its JSON (errors with line and column), its shape as a pipeline document
 * (else the issues say what is wrong, e.g. no `format`), and the validator's issues (a document
 * with errors can still become a draft, to be fixed on the canvas).
 */
export function readPipelineFile(text: string): ReadPipelineFile {
  const clean = text.replace(/^\uFEFF/, "");
  let value: unknown;
  try {
    value = JSON.parse(clean);
  } catch (error) {
    // Node's and some browsers' messages carry no position: find the first error ourselves.
    const at = firstJsonError(clean);
    const message = at ? at.message : error instanceof Error ? error.message : String(error);
    return { ok: false, stage: "json", message, ...position(clean, at?.offset ?? clean.length) };
  }
  const result = validatePipeline(value);
  if (!result.document) return { ok: false, stage: "document", issues: result.issues, value };
  const errors = result.issues.filter((i) => i.severity === "error").length;
  return { ok: true, value, document: result.document, issues: result.issues, errors, warnings: result.issues.length - errors };
}

/** A name not in `taken`: `name`, else `name-2`, `name-3`, … (within the 128 characters a name may have). */
export function uniqueName(name: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  if (!used.has(name)) return name;
  for (let i = 2; ; i++) {
    const suffix = `-${i}`;
    const candidate = `${name.slice(0, 128 - suffix.length)}${suffix}`;
    if (!used.has(candidate)) return candidate;
  }
}
