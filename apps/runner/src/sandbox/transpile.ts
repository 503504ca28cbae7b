// The user's TypeScript → the JavaScript the isolate runs, in the runner (TypeScript's
// transpileModule: syntax only, no type checking, no module resolution). The output is a
// CommonJS body that the child wraps in `function (exports, require, module) { … }`, so an
// `import` becomes a call to the sandbox's `require`, which always throws.
// Positions in the isolate's errors are mapped back to the TypeScript through the source map.
import { createRequire } from "node:module";
import type * as TS from "typescript";

/** The name the user's code has in messages and stack traces. */
export const USER_SOURCE_NAME = "process.custom.ts";
/** The name the transpiled code is compiled under inside the isolate. */
export const USER_SCRIPT_NAME = "process.custom.js";

export interface SourcePosition {
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
}

export interface SyntaxDiagnostic extends SourcePosition {
  message: string;
}

export type TranspileResult =
  | { ok: true; js: string; map: SourceMap }
  | { ok: false; diagnostics: SyntaxDiagnostic[] };

let tsModule: typeof TS | undefined;
/** typescript is large (≈ 9 MB of JS): loaded on the first process.custom only. */
function typescript(): typeof TS {
  tsModule ??= createRequire(import.meta.url)("typescript") as typeof TS;
  return tsModule;
}

export function transpileUserCode(code: string): TranspileResult {
  const ts = typescript();
  const out = ts.transpileModule(code, {
    fileName: USER_SOURCE_NAME,
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      sourceMap: true,
      inlineSources: false,
      removeComments: false,
      esModuleInterop: false,
      importHelpers: false,
      alwaysStrict: true,
    },
  });
  const diagnostics: SyntaxDiagnostic[] = [];
  for (const d of out.diagnostics ?? []) {
    if (d.category !== ts.DiagnosticCategory.Error) continue;
    const message = ts.flattenDiagnosticMessageText(d.messageText, " ");
    if (d.file !== undefined && d.start !== undefined) {
      const p = d.file.getLineAndCharacterOfPosition(d.start);
      diagnostics.push({ message, line: p.line + 1, column: p.character + 1 });
    } else {
      diagnostics.push({ message, line: 1, column: 1 });
    }
  }
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  // The trailing sourceMappingURL comment means nothing inside the isolate.
  const js = out.outputText.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n");
  return { ok: true, js, map: SourceMap.parse(out.sourceMapText ?? "") };
}

// ---- Source maps (version 3, one source, as transpileModule writes them) -------------------

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_INDEX = new Map([...B64].map((c, i) => [c, i] as const));

/** Decodes one segment's base64 VLQ fields. */
function decodeVlq(segment: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const ch of segment) {
    const digit = B64_INDEX.get(ch);
    if (digit === undefined) return values;
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) {
      shift += 5;
    } else {
      values.push(value & 1 ? -Math.floor(value / 2) : Math.floor(value / 2));
      value = 0;
      shift = 0;
    }
  }
  return values;
}

/** [generated column, original line, original column], all 0-based, sorted by generated column. */
type Segment = readonly [number, number, number];

export class SourceMap {
  private constructor(private readonly lines: readonly Segment[][]) {}

  static parse(text: string): SourceMap {
    let mappings = "";
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === "object" && parsed !== null && "mappings" in parsed && typeof parsed.mappings === "string") mappings = parsed.mappings;
    } catch {
      // No map: positions are reported in the generated code.
    }
    const lines: Segment[][] = [];
    let srcLine = 0;
    let srcCol = 0;
    for (const lineText of mappings.split(";")) {
      const segments: Segment[] = [];
      let genCol = 0;
      for (const seg of lineText.split(",")) {
        if (seg === "") continue;
        const f = decodeVlq(seg);
        if (f.length === 0) continue;
        genCol += f[0] ?? 0;
        if (f.length >= 4) {
          srcLine += f[2] ?? 0;
          srcCol += f[3] ?? 0;
          segments.push([genCol, srcLine, srcCol]);
        }
      }
      lines.push(segments);
    }
    return new SourceMap(lines);
  }

  /** The original position of a generated one (both 1-based), or undefined if unmapped. */
  original(pos: SourcePosition): SourcePosition | undefined {
    const segments = this.lines[pos.line - 1];
    if (segments === undefined || segments.length === 0) return undefined;
    const col = pos.column - 1;
    let best: Segment | undefined;
    for (const s of segments) {
      if (s[0] <= col) best = s;
      else break;
    }
    best ??= segments[0];
    if (best === undefined) return undefined;
    // Within the segment the code is copied as is, so the offset from its start carries over.
    const offset = best[0] <= col ? col - best[0] : 0;
    return { line: best[1] + 1, column: best[2] + offset + 1 };
  }
}

const POSITION = new RegExp(`${USER_SCRIPT_NAME.replace(/\./g, "\\.")}:(\\d+):(\\d+)`, "g");

/**
 * Rewrites every `process.custom.js:L:C` of an isolate message or stack into the TypeScript
 * position; returns the text and the first position found (the innermost user frame).
 */
export function mapPositions(text: string, map: SourceMap): { text: string; first: SourcePosition | undefined } {
  let first: SourcePosition | undefined;
  const mapped = text.replace(POSITION, (_m, l: string, c: string) => {
    const generated = { line: Number(l), column: Number(c) };
    const p = map.original(generated) ?? generated;
    first ??= p;
    return `${USER_SOURCE_NAME}:${p.line}:${p.column}`;
  });
  return { text: mapped, first };
}
