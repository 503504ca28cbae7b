// The budgets on user code and expressions, in one place: CEL parse and evaluation limits, the
// length of expression and code fields, dry runs, and the defaults of a job's memory settings.
// The pipeline settings schema, the validator, the runner and the editors all read these.

/** Longest CEL expression source, in characters (a param, an inspector field, a tRPC input). */
export const MAX_EXPRESSION_LENGTH = 10_000;
/** Longest `process.custom` code, in characters. */
export const MAX_CODE_LENGTH = 200_000;
/** Deepest nesting of a CEL expression (parenthesis, calls, member access, ternaries). */
export const MAX_EXPRESSION_DEPTH = 32;
/** Most AST nodes in one CEL expression. */
export const MAX_EXPRESSION_NODES = 2_000;
/** Most evaluation steps (AST nodes evaluated, macro iterations included) for one record. */
export const MAX_EVALUATION_STEPS = 100_000;
/** Most characters, list elements and map entries one evaluation may create, summed. */
export const MAX_EVALUATION_ALLOCATION = 1_000_000;

/** Default per-key state limit of a job (settings.maxStateBytesPerKey): 1 MB. */
export const DEFAULT_MAX_STATE_BYTES_PER_KEY = 1024 * 1024;
/** Default heap keyed-state budget of a whole job (settings.maxJobStateBytes): 512 MB. */
export const DEFAULT_MAX_JOB_STATE_BYTES = 512 * 1024 * 1024;

/** Heap of the worker a dry run executes in (MB), and its wall-clock limit. */
export const DRY_RUN_MAX_HEAP_MB = 256;
export const DRY_RUN_TIMEOUT_MS = 30_000;

/** Human form of a byte count: `3.6 MB`, `512 KB`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, "")} MB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, "")} KB`;
  return `${bytes} bytes`;
}
