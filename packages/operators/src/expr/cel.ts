// CEL (Common Expression Language) for operator params: `amount > 50000 && country != "SA"`.
// An expression is parsed once per node (compileExpression) and evaluated per record with the
// record's top-level fields as variables. Never `eval`: CEL is non-Turing-complete, side-effect
// free and has no access to the clock, so evaluation stays deterministic.
//
// Numbers: records are JSON, so every number reaches CEL as a JS number, i.e. a CEL `double`,
// while literals without a decimal point (`50000`) are CEL `int`s (bigint in cel-js). cel-js
// compares int and double across types (`amount > 50000` holds for 60000 and for 50000.5), but
// has no arithmetic between them (`amount * 2` is "no such overload: double * int"). We register
// the mixed overloads (and `%` on doubles, which CEL lacks but structuring rules need:
// `amount % 1000 == 0`), so arithmetic works whatever the JSON spelling of the number.
//
// Budgets (../limits): the source's length and nesting are parse-time errors; every evaluation
// is metered (steps, and the characters, list elements and map entries it creates), and
// `matches()` runs on RE2 (re2js, linear time), so an expression fails its record, never the job.
import { Environment, type ASTNode } from "@marcbachmann/cel-js";
import { RE2JS } from "re2js";
import type { JsonObject, JsonValue } from "../core/api";
import { MAX_EVALUATION_ALLOCATION, MAX_EVALUATION_STEPS, MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LENGTH, MAX_EXPRESSION_NODES } from "../limits";

/** Where an expression lives in a pipeline, so every error can name the node and the param. */
export interface ExpressionSite {
  nodeId: string;
  /** Dotted param path, e.g. `expression` or `assignments.risk`. */
  param: string;
}

/** A 1-based position in the expression text, as Monaco markers and the CLI want them. */
export interface SourcePosition {
  /** 0-based character offset into the expression. */
  offset: number;
  line: number;
  column: number;
}

export interface SourceSpan {
  start: SourcePosition;
  end: SourcePosition;
}

/** Base of every expression error: the message starts with `node "x": param "y": `. */
export class ExpressionError extends Error {
  readonly nodeId: string;
  readonly param: string;
  /** The message without the node/param prefix. */
  readonly detail: string;
  readonly span: SourceSpan | undefined;
  constructor(site: ExpressionSite, detail: string, span?: SourceSpan) {
    super(`node "${site.nodeId}": param "${site.param}": ${detail}`);
    this.name = "ExpressionError";
    this.nodeId = site.nodeId;
    this.param = site.param;
    this.detail = detail;
    this.span = span;
  }
}

/** The expression does not parse; `span` points at the offending token. */
export class ExpressionSyntaxError extends ExpressionError {
  constructor(site: ExpressionSite, detail: string, span: SourceSpan) {
    super(site, detail, span);
    this.name = "ExpressionSyntaxError";
  }
  declare readonly span: SourceSpan;
}

/** Evaluation failed on one record (missing field, wrong type, ...): the record goes to `errors`. */
export class ExpressionEvaluationError extends ExpressionError {
  /** The record field at fault, when one is (a missing field, a null value). */
  readonly field: string | undefined;
  constructor(site: ExpressionSite, detail: string, span?: SourceSpan, field?: string) {
    super(site, detail, span);
    this.name = "ExpressionEvaluationError";
    this.field = field;
  }
}

export interface CompiledExpression {
  readonly source: string;
  readonly site: ExpressionSite;
  /** Evaluates against one record and returns the result as JSON (ints become numbers). */
  evaluate(record: JsonObject): JsonValue;
  /** Evaluates a predicate; a non-bool result is an ExpressionEvaluationError. */
  test(record: JsonObject): boolean;
  /** Top-level record fields the expression reads, sorted (macro variables excluded). */
  referencedFields(): readonly string[];
}

/** The variable bound to the whole record. */
export const RECORD_VARIABLE = "record";
/** CEL's type identifiers: a bare field of one of these names reads the type, not the field. */
const CEL_TYPE_IDENTIFIERS = ["type", "int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "dyn"];

// ---- The environment: built once, shared by every expression (building it is the costly part) ----

type Num = number | bigint;
const toNum = (v: Num): number => Number(v);

function buildEnvironment(): Environment {
  const env = new Environment({
    // Fields are the record's, unknown in advance; the validator checks names against the
    // source's declared fields instead.
    unlistedVariablesAreDyn: true,
    // `[amount, 1]` mixes a double field and an int literal; records are dynamically typed.
    homogeneousAggregateLiterals: false,
    limits: { maxAstNodes: MAX_EXPRESSION_NODES, maxDepth: MAX_EXPRESSION_DEPTH },
  });
  const arithmetic: Record<string, (a: number, b: number) => number> = {
    "+": (a, b) => a + b,
    "-": (a, b) => a - b,
    "*": (a, b) => a * b,
    "/": (a, b) => a / b,
    "%": (a, b) => a % b,
  };
  for (const [op, fn] of Object.entries(arithmetic)) {
    env.registerOperator(`double ${op} int`, (a: Num, b: Num) => fn(toNum(a), toNum(b)));
    env.registerOperator(`int ${op} double`, (a: Num, b: Num) => fn(toNum(a), toNum(b)));
  }
  // cel-js hands an operator its evaluator; the first `%` below gives us the one to meter.
  let evaluator: MeteredEvaluator | undefined;
  env.registerOperator("double % double", ((a: number, b: number, _ast: unknown, ev: MeteredEvaluator) => {
    evaluator ??= ev;
    return a % b;
  }) as (a: number, b: number) => number);
  env.evaluate("1.0 % 2.0");
  if (!evaluator) throw new Error("cel-js did not pass its evaluator to an operator: the evaluation meter cannot be installed");
  installMeter(evaluator);
  return env;
}

// ---- Evaluation budget and RE2 ----------------------------------------------------------------

/** The part of cel-js's evaluator the meter wraps: every child node is evaluated through run(). */
interface MeteredEvaluator {
  run(ast: ASTNode, ctx: unknown): unknown;
}
type EvaluableNode = ASTNode & { evaluate(ev: MeteredEvaluator, ast: ASTNode, ctx: unknown): unknown };

/** The meter of the evaluation in progress (evaluation is synchronous, so one at a time). */
interface Meter {
  steps: number;
  allocated: number;
  exceeded: string | undefined;
}
let meter: Meter | undefined;

class BudgetExceeded extends Error {}
class UnsupportedPattern extends Error {}

/** Nodes whose result is a value the evaluation made (reads of fields and literals are not). */
const ALLOCATING_OPS = new Set(["+", "list", "map", "call", "rcall", "comprehension"]);

function allocationOf(v: unknown): number {
  if (typeof v === "string") return v.length;
  if (Array.isArray(v) || v instanceof Uint8Array) return v.length;
  if (v instanceof Map) return v.size;
  return 0;
}

function overBudget(m: Meter, why: string): never {
  m.exceeded ??= why;
  throw new BudgetExceeded(m.exceeded);
}

const patterns = new Map<string, RE2JS>();
function re2(pattern: string): RE2JS {
  let compiled = patterns.get(pattern);
  if (!compiled) {
    try {
      compiled = RE2JS.compile(pattern);
    } catch (e) {
      throw new UnsupportedPattern(`matches(): the pattern ${JSON.stringify(pattern)} is not a regular expression RE2 runs (${(e as Error).message}); backreferences and lookaround are not supported`);
    }
    if (patterns.size >= 256) patterns.clear();
    patterns.set(pattern, compiled);
  }
  return compiled;
}

/** `s.matches(p)`: the receiver and the pattern nodes, when `ast` is such a call. */
function matchesCall(ast: ASTNode): [ASTNode, ASTNode] | undefined {
  if (ast.op !== "rcall") return undefined;
  const [name, receiver, args] = ast.args;
  return name === "matches" && args.length === 1 && args[0] ? [receiver, args[0]] : undefined;
}

const isBind = (ast: ASTNode): boolean => ast.op === "rcall" && ast.args[0] === "bind";

function installMeter(ev: MeteredEvaluator): void {
  ev.run = function run(this: MeteredEvaluator, ast: ASTNode, ctx: unknown): unknown {
    const m = meter;
    if (m) {
      if (m.exceeded) throw new BudgetExceeded(m.exceeded);
      if (++m.steps > MAX_EVALUATION_STEPS) overBudget(m, `it took more than ${MAX_EVALUATION_STEPS} steps`);
    }
    const call = matchesCall(ast);
    let result: unknown;
    if (call) {
      const text = this.run(call[0], ctx);
      const pattern = this.run(call[1], ctx);
      // Anything but two strings: cel-js's own overload resolution says what is wrong.
      result = typeof text === "string" && typeof pattern === "string" ? re2(pattern).matcher(text).find() : (ast as EvaluableNode).evaluate(this, ast, ctx);
    } else {
      result = (ast as EvaluableNode).evaluate(this, ast, ctx);
    }
    // cel.bind(v, init, body) hands its body's value through: counted where it was made.
    if (m && ALLOCATING_OPS.has(ast.op) && !isBind(ast) && (m.allocated += allocationOf(result)) > MAX_EVALUATION_ALLOCATION) {
      overBudget(m, `it created more than ${MAX_EVALUATION_ALLOCATION} characters, list elements and map entries`);
    }
    return result;
  };
}

/** cel-js evaluates the root node directly, not through run(): route it through run() as well. */
function routeRootThroughRun(root: ASTNode): void {
  type Evaluate = (ev: MeteredEvaluator, ast: ASTNode, ctx: unknown) => unknown;
  // cel-js replaces a node's evaluate() by its operator's on the first call: keep that as `inner`.
  let inner = (root as EvaluableNode).evaluate as Evaluate;
  let entered = false;
  const outer: Evaluate = (ev, ast, ctx) => {
    if (entered) return inner.call(root, ev, ast, ctx);
    entered = true;
    try {
      return ev.run(root, ctx);
    } finally {
      entered = false;
    }
  };
  Object.defineProperty(root, "evaluate", {
    configurable: true,
    get: () => outer,
    set: (fn: Evaluate) => {
      inner = fn;
    },
  });
}

/** Literal patterns are checked when the expression is compiled, so the editor marks them. */
function checkLiteralPatterns(node: ASTNode, visit: (pattern: string, node: ASTNode) => void): void {
  const call = matchesCall(node);
  if (call && call[1].op === "value" && typeof call[1].args === "string") visit(call[1].args, call[1]);
  const walk = (v: unknown): void => {
    if (isAstNode(v)) checkLiteralPatterns(v, visit);
    else if (Array.isArray(v)) v.forEach(walk);
  };
  walk(node.args);
}

let sharedEnv: Environment | undefined;
function environment(): Environment {
  sharedEnv ??= buildEnvironment();
  return sharedEnv;
}

// ---- Positions ------------------------------------------------------------------------------

export function positionAt(source: string, offset: number): SourcePosition {
  const clamped = Math.max(0, Math.min(offset, source.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < clamped; i++) {
    if (source.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { offset: clamped, line, column: clamped - lineStart + 1 };
}

function spanOf(source: string, range: { start: number; end: number } | undefined): SourceSpan | undefined {
  if (!range) return undefined;
  return { start: positionAt(source, range.start), end: positionAt(source, Math.max(range.end, range.start)) };
}

interface CelErrorLike {
  name: string;
  code?: string;
  summary?: string;
  message: string;
  range?: { start: number; end: number };
}
function isCelError(e: unknown): e is CelErrorLike {
  return e instanceof Error && "summary" in e;
}

/** cel-js messages start with a capital and carry a source excerpt; keep the first line only. */
function summaryOf(e: CelErrorLike): string {
  const text = (e.summary ?? e.message.split("\n")[0] ?? e.message)
    // Record fields are `dyn` to cel-js; the analyst cares about the runtime type.
    .replace(/dyn<([a-z_]+)>/g, "$1")
    .replace(/^Unexpected token: EOF$/, "unexpected end of the expression (an operand or a closing bracket is missing)");
  return text.charAt(0).toLowerCase() + text.slice(1);
}

// ---- Free variables -------------------------------------------------------------------------

/** Macros whose first argument is an iteration variable bound in the other arguments. */
const ITERATION_MACROS = new Set(["all", "exists", "exists_one", "map", "filter"]);

function isAstNode(v: unknown): v is ASTNode {
  return typeof v === "object" && v !== null && "op" in v && "args" in v;
}

/** Collects the root identifiers that are not bound by a macro (`xs.exists(x, x > 1)` reads `xs`). */
function collectFreeVariables(node: ASTNode, bound: ReadonlySet<string>, out: Set<string>): void {
  switch (node.op) {
    case "id":
      if (!bound.has(node.args)) out.add(node.args);
      return;
    case "value":
      return;
    case ".":
    case ".?":
      collectFreeVariables(node.args[0], bound, out);
      return;
    case "rcall": {
      const [name, receiver, callArgs] = node.args;
      const first = callArgs[0];
      if (name === "bind" && receiver.op === "id" && receiver.args === "cel" && first?.op === "id" && callArgs.length === 3) {
        // cel.bind(v, init, body): v is bound in body only.
        collectFreeVariables(callArgs[1] as ASTNode, bound, out);
        collectFreeVariables(callArgs[2] as ASTNode, new Set([...bound, first.args]), out);
        return;
      }
      collectFreeVariables(receiver, bound, out);
      if (ITERATION_MACROS.has(name) && first?.op === "id") {
        const inner = new Set([...bound, first.args]);
        for (const arg of callArgs.slice(1)) collectFreeVariables(arg, inner, out);
        return;
      }
      for (const arg of callArgs) collectFreeVariables(arg, bound, out);
      return;
    }
    case "call":
      for (const arg of node.args[1]) collectFreeVariables(arg, bound, out);
      return;
    default: {
      // Operators, lists, maps, ternaries: every operand that is a node.
      const args: unknown = node.args;
      const visit = (v: unknown): void => {
        if (isAstNode(v)) collectFreeVariables(v, bound, out);
        else if (Array.isArray(v)) v.forEach(visit);
      };
      visit(args);
    }
  }
}

// ---- Values back to JSON --------------------------------------------------------------------

/** Converts a CEL result to JSON: ints to numbers, maps to objects, timestamps to ISO strings. */
function toJson(value: unknown, fail: (why: string) => never): JsonValue {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) fail(`the result ${value} is not a finite number (division by zero?)`);
      return value;
    case "bigint":
      if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
        fail(`the integer result ${value} does not fit a JSON number exactly`);
      }
      return Number(value);
    case "object": {
      if (value === null) return null;
      if (Array.isArray(value)) return value.map((v) => toJson(v, fail));
      if (value instanceof Date) return value.toISOString();
      if (value instanceof Map) {
        const obj: JsonObject = {};
        for (const [k, v] of value) obj[String(k)] = toJson(v, fail);
        return obj;
      }
      if (value instanceof Uint8Array) fail("bytes cannot be stored in a JSON record; convert with string() or .base64()");
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto === Object.prototype || proto === null) {
        const obj: JsonObject = {};
        for (const [k, v] of Object.entries(value)) obj[k] = toJson(v, fail);
        return obj;
      }
      // uint, duration, type values: their string form is what an analyst would expect.
      return String(value);
    }
    default:
      return fail(`a ${typeof value} result cannot be stored in a JSON record`);
  }
}

function celTypeName(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "bigint") return "int";
  if (typeof value === "number") return "double";
  if (typeof value === "boolean") return "bool";
  if (Array.isArray(value)) return "list";
  if (typeof value === "object") return "map";
  return typeof value;
}

// ---- Compilation ----------------------------------------------------------------------------

/**
 * Parses `source` once. Throws ExpressionSyntaxError (with line and column) when it does not
 * parse. The result is cheap to evaluate per record.
 */
export function compileExpression(source: string, site: ExpressionSite): CompiledExpression {
  if (source.trim() === "") {
    throw new ExpressionSyntaxError(site, "the expression is empty", spanOf(source, { start: 0, end: source.length }) as SourceSpan);
  }
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionSyntaxError(site, `the expression is ${source.length} characters long, over the limit of ${MAX_EXPRESSION_LENGTH}`, spanOf(source, { start: MAX_EXPRESSION_LENGTH, end: source.length }) as SourceSpan);
  }
  let parsed: ReturnType<Environment["parse"]>;
  try {
    parsed = environment().parse(source);
  } catch (e) {
    if (!isCelError(e)) throw e;
    const span = spanOf(source, e.range) ?? (spanOf(source, { start: 0, end: 0 }) as SourceSpan);
    if (e.code === "limit_exceeded") {
      const detail = /maxDepth/.test(e.message)
        ? `the expression nests deeper than ${MAX_EXPRESSION_DEPTH} levels (brackets, calls, ternaries); simplify it or split it over several nodes`
        : `the expression has more than ${MAX_EXPRESSION_NODES} terms; simplify it or split it over several nodes`;
      throw new ExpressionSyntaxError(site, detail, span);
    }
    throw new ExpressionSyntaxError(site, `syntax error at line ${span.start.line}, column ${span.start.column}: ${summaryOf(e)}`, span);
  }
  routeRootThroughRun(parsed.ast);
  checkLiteralPatterns(parsed.ast, (pattern, node) => {
    try {
      re2(pattern);
    } catch (e) {
      if (!(e instanceof UnsupportedPattern)) throw e;
      throw new ExpressionSyntaxError(site, e.message, spanOf(source, node.range) as SourceSpan);
    }
  });
  const free = new Set<string>();
  collectFreeVariables(parsed.ast, new Set(), free);
  // `record` names the whole record, so fields whose names are CEL built-ins (`type`, `int`,
  // ...) stay readable as `record.type`; a record with its own `record` field keeps it.
  const usesRecordVariable = free.has(RECORD_VARIABLE);
  free.delete(RECORD_VARIABLE);
  const fields = [...free].sort();

  const run = (record: JsonObject): unknown => {
    const outer = meter;
    const m: Meter = { steps: 0, allocated: 0, exceeded: undefined };
    meter = m;
    try {
      const activation = usesRecordVariable && !Object.hasOwn(record, RECORD_VARIABLE) ? { ...record, [RECORD_VARIABLE]: record } : record;
      const result = parsed(activation) as unknown;
      // `a || b` swallows an error in `a` when `b` decides; a blown budget is never swallowed.
      if (m.exceeded) throw new BudgetExceeded(m.exceeded);
      return result;
    } catch (e) {
      if (e instanceof BudgetExceeded || m.exceeded) throw new ExpressionEvaluationError(site, `evaluation budget: ${m.exceeded ?? (e as Error).message}; the record is refused`);
      // V8's own ceiling on a string or array length: the same budget, met by one step.
      if (e instanceof RangeError) throw new ExpressionEvaluationError(site, `evaluation budget: ${e.message.toLowerCase()}; the record is refused`);
      if (e instanceof UnsupportedPattern) throw new ExpressionEvaluationError(site, e.message);
      if (!isCelError(e)) throw e;
      const span = spanOf(source, e.range);
      if (e.code === "unknown_variable" && e.range) {
        const field = source.slice(e.range.start, e.range.end);
        throw new ExpressionEvaluationError(site, `field "${field}" is missing from the record`, span, field);
      }
      // A null field in arithmetic or comparison reads as "no such overload: null_type > int";
      // say which field it is.
      const nullField = fields.find((f) => record[f] === null);
      const builtin = e.code === "no_such_overload" ? CEL_TYPE_IDENTIFIERS.find((name) => new RegExp(`(^|[^.\\w])${name}\\s*(==|!=|in\\b)`).test(source)) : undefined;
      const hint =
        builtin !== undefined
          ? ` (\`${builtin}\` is a CEL built-in type name, not your field: write \`record.${builtin}\` to read the field named ${builtin})`
          : e.code === "no_such_overload" && nullField !== undefined
            ? ` (field "${nullField}" is null)`
            : "";
      throw new ExpressionEvaluationError(site, `${summaryOf(e)}${hint}`, span, hint ? nullField : undefined);
    } finally {
      meter = outer;
    }
  };
  const fail = (why: string): never => {
    throw new ExpressionEvaluationError(site, why);
  };

  return {
    source,
    site,
    evaluate: (record) => toJson(run(record), fail),
    test(record) {
      const result = run(record);
      if (typeof result !== "boolean") {
        fail(`the expression must give a bool (true or false), but gave a ${celTypeName(result)}; use a comparison such as \`amount > 100\``);
      }
      return result as boolean;
    },
    referencedFields: () => fields,
  };
}

export interface ExpressionDiagnostic {
  severity: "error" | "warning";
  code: "expression-syntax" | "unknown-field";
  message: string;
  span?: SourceSpan;
  /** Set for unknown-field diagnostics. */
  field?: string;
}

/**
 * Checks an expression without evaluating it (the validator and the editor's markers):
 * syntax, and, when `knownFields` is given, fields the records do not declare.
 */
export function checkExpression(source: string, site: ExpressionSite, knownFields?: readonly string[]): ExpressionDiagnostic[] {
  let compiled: CompiledExpression;
  try {
    compiled = compileExpression(source, site);
  } catch (e) {
    if (e instanceof ExpressionSyntaxError) return [{ severity: "error", code: "expression-syntax", message: e.detail, span: e.span }];
    throw e;
  }
  if (!knownFields) return [];
  const known = new Set(knownFields);
  return compiled
    .referencedFields()
    .filter((f) => !known.has(f))
    .map((field) => ({
      severity: "error" as const,
      code: "unknown-field" as const,
      field,
      message: `unknown field "${field}"${suggestSuffix(field, knownFields)}; the input records have ${knownFields.map((f) => `"${f}"`).join(", ")}`,
    }));
}

function suggestSuffix(name: string, candidates: readonly string[]): string {
  const best = closestName(name, candidates);
  return best ? ` — did you mean "${best}"?` : "";
}

/** Levenshtein distance, for "did you mean" suggestions on names. */
export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0] ?? 0;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j] ?? 0;
      const cost = a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1;
      prev[j] = Math.min(up + 1, (prev[j - 1] ?? 0) + 1, diag + cost);
      diag = up;
    }
  }
  return prev[b.length] ?? 0;
}

/** The candidate nearest to `name`, if it is near enough to be a likely typo. */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  const tolerance = Math.max(2, Math.floor(name.length / 3));
  return best !== undefined && bestDistance <= tolerance ? best : undefined;
}
