// The one error type of the sandbox: the runner routes the record (or timer) that caused it to
// the node's `errors` output, and fails the task only for `syntax` and `init` (the code itself
// is broken, every record would fail).
import type { Effects } from "./types";

export type SandboxErrorKind =
  /** The code does not parse (TypeScript's parser, or V8's when compiling the transpiled code). */
  | "syntax"
  /** Loading the module failed: top-level code threw, ran too long or too big, or processElement is missing. */
  | "init"
  /** processElement / onTimer threw (also: misuse of ctx, such as non-JSON output). */
  | "exception"
  /** The call ran longer than timeoutMs (the isolate was stopped, or the process killed). */
  | "timeout"
  /** The isolate went over memoryLimitMb (or the sandbox process ran out of memory). */
  | "memory"
  /** The sandbox process died for another reason; it is restarted for the next call. */
  | "crash"
  /** What came back from the isolate is not a valid batch of effects. */
  | "invalid-output"
  /** close() was called. */
  | "closed";

export interface SandboxErrorDetails {
  /** 1-based position in the user's TypeScript, when known. */
  line?: number;
  column?: number;
  /** The user's stack, positions mapped to the TypeScript, sandbox frames removed. */
  userStack?: string;
  /** For `exception`: what the call did before it threw (the engine keeps state writes made before a throw). */
  partialEffects?: Effects;
  /** For `crash`: the end of the sandbox process's stderr. */
  processOutput?: string;
  cause?: unknown;
}

export class SandboxError extends Error {
  override readonly name = "SandboxError";
  readonly kind: SandboxErrorKind;
  readonly line: number | undefined;
  readonly column: number | undefined;
  readonly userStack: string | undefined;
  readonly partialEffects: Effects | undefined;
  readonly processOutput: string | undefined;

  constructor(kind: SandboxErrorKind, message: string, details: SandboxErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = kind;
    this.line = details.line;
    this.column = details.column;
    this.userStack = details.userStack;
    this.partialEffects = details.partialEffects;
    this.processOutput = details.processOutput;
  }
}

export const isSandboxError = (e: unknown): e is SandboxError => e instanceof SandboxError;
