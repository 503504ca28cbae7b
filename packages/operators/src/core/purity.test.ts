// The engine core is deterministic: a replay of the same input must give the same output, byte for
// byte. This test refuses, in every non-test module of packages/operators/src, the imports that do
// I/O and the calls that read a clock or randomness, and says what to use instead (Temporal's
// workflow bundler does the same for its deterministic sandbox).
/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";

// Every module's text through Vite's glob import: the test itself stays free of file-system calls.
const MODULES = import.meta.glob<string>(["../**/*.ts", "!../**/*.test.ts", "!../**/*.testkit.*"], { query: "?raw", import: "default", eager: true });

const FORBIDDEN_IMPORTS = /\bfrom\s+["'](?:node:)?(fs|fs\/promises|net|http|https|http2|child_process|dgram|dns|tls|worker_threads|cluster|os|readline|kafkajs|pg|@prisma\/client|@keyflow\/db)["']|\brequire\(\s*["'][^"']+["']\s*\)|\bimport\(\s*["'][^"']+["']\s*\)/g;
const FORBIDDEN_CALLS = /(?<![`'"\w.])(Date\.now|Math\.random|performance\.now|process\.hrtime|crypto\.randomUUID|crypto\.getRandomValues|setTimeout|setInterval|setImmediate)\s*\(|(?<![`'"\w.])new\s+Date\(\s*\)|(?<![`'"\w.])process\.env\b/g;

/** Drops comments so that prose about Date.now() does not count. */
const code = (text: string): string => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");

describe("packages/operators is pure", () => {
  it("no I/O imports, no clock, no randomness, no environment", () => {
    const problems: string[] = [];
    const files = Object.entries(MODULES);
    expect(files.length).toBeGreaterThan(50);
    for (const [path, source] of files) {
      const file = path.replace(/^\.\.\//, "");
      const text = code(source);
      for (const m of text.matchAll(FORBIDDEN_IMPORTS)) {
        problems.push(`${file}: ${m[0]} — the engine does no I/O; the runner (apps/runner) owns sources, sinks and files`);
      }
      for (const m of text.matchAll(FORBIDDEN_CALLS)) {
        problems.push(`${file}: ${m[0]} — time comes from records, watermarks and ctx.timerService.currentProcessingTime(); randomness from a hash of the record (see keys.ts murmur3)`);
      }
    }
    expect(problems).toEqual([]);
  });
});
