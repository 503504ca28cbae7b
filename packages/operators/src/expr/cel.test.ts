import { describe, expect, it } from "vitest";
import { ExpressionEvaluationError, ExpressionSyntaxError, checkExpression, closestName, compileExpression } from "./cel";

const site = { nodeId: "f", param: "expression" };
const compile = (source: string) => compileExpression(source, site);

describe("CEL numbers: JSON numbers are doubles, literals may be ints", () => {
  it("compares a field with an int literal whether the JSON number is integral or decimal", () => {
    const e = compile("amount > 50000");
    expect(e.test({ amount: 60000 })).toBe(true);
    expect(e.test({ amount: 50000.5 })).toBe(true);
    expect(e.test({ amount: 50000 })).toBe(false);
    expect(e.test({ amount: 49999.99 })).toBe(false);
  });

  it("compares with a decimal literal and tests equality across int and double", () => {
    expect(compile("amount >= 50000.0").test({ amount: 50000 })).toBe(true);
    expect(compile("amount == 100").test({ amount: 100 })).toBe(true);
    expect(compile("amount == 100").test({ amount: 100.0 })).toBe(true);
    expect(compile("amount in [100, 200]").test({ amount: 200 })).toBe(true);
  });

  it("does arithmetic between fields and int literals (cel-js alone has no double*int overload)", () => {
    expect(compile("amount * 2").evaluate({ amount: 60000 })).toBe(120000);
    expect(compile("amount + 1").evaluate({ amount: 1.5 })).toBe(2.5);
    expect(compile("1 - amount").evaluate({ amount: 0.25 })).toBe(0.75);
    expect(compile("amount / 2").evaluate({ amount: 3 })).toBe(1.5);
    expect(compile("amount * 2 > 100000").test({ amount: 50000.5 })).toBe(true);
  });

  it("supports % on decimals (structuring: round amounts)", () => {
    expect(compile("amount % 1000 == 0").test({ amount: 9000 })).toBe(true);
    expect(compile("amount % 1000 == 0").test({ amount: 9000.5 })).toBe(false);
    expect(compile("amount % 2.5").evaluate({ amount: 6 })).toBe(1);
  });

  it("keeps CEL int semantics between int literals and returns JSON numbers", () => {
    expect(compile("7 / 2").evaluate({})).toBe(3);
    expect(compile("size(tags)").evaluate({ tags: ["a", "b"] })).toBe(2);
    expect(compile("int(amount)").evaluate({ amount: 3.7 })).toBe(3);
  });
});

describe("CEL strings, booleans, nesting, macros", () => {
  it("evaluates the issue's example", () => {
    const e = compile('amount > 50000 && country != "SA"');
    expect(e.test({ amount: 60000, country: "AE" })).toBe(true);
    expect(e.test({ amount: 60000, country: "SA" })).toBe(false);
    expect(e.referencedFields()).toEqual(["amount", "country"]);
  });

  it("evaluates string functions, membership, ternaries and nested fields", () => {
    expect(compile('merchantId.startsWith("m-5411")').test({ merchantId: "m-5411-003" })).toBe(true);
    expect(compile('country in ["NG", "RU"]').test({ country: "RU" })).toBe(true);
    expect(compile('device.os == "android"').test({ device: { os: "android" } })).toBe(true);
    expect(compile("has(device.os)").test({ device: {} })).toBe(false);
    expect(compile('amount > 1000 ? "high" : "low"').evaluate({ amount: 5 })).toBe("low");
    expect(compile("isFraud").test({ isFraud: true })).toBe(true);
  });

  it("builds objects, converting ints to numbers", () => {
    expect(compile('{"cardId": cardId, "double": amount * 2, "n": 1}').evaluate({ cardId: "c1", amount: 2 })).toEqual({ cardId: "c1", double: 4, n: 1 });
  });

  it("lists only free fields: macro and bind variables are not record fields", () => {
    expect(compile("items.exists(i, i.price > limit)").referencedFields()).toEqual(["items", "limit"]);
    expect(compile("cel.bind(x, amount * 2, x > 10)").referencedFields()).toEqual(["amount"]);
    expect(compile("items.map(i, i.price).size() > 0 && has(device.os)").referencedFields()).toEqual(["device", "items"]);
  });
});

describe("CEL errors name the node, the param and the field", () => {
  it("reports a missing field by name", () => {
    const e = compile("amount > 50000 && country != \"SA\"");
    let error: unknown;
    try {
      e.test({ amount: 60000 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ExpressionEvaluationError);
    expect((error as ExpressionEvaluationError).message).toBe('node "f": param "expression": field "country" is missing from the record');
    expect((error as ExpressionEvaluationError).field).toBe("country");
  });

  it("does not fail on a missing field that short-circuit evaluation never reads", () => {
    expect(compile("amount > 10 || country == \"SA\"").test({ amount: 20 })).toBe(true);
  });

  it("names a null field used in a comparison", () => {
    expect(() => compile("amount > 10").test({ amount: null })).toThrow(/field "amount" is null/);
  });

  it("refuses a non-bool predicate result with the likely fix", () => {
    expect(() => compile("amount").test({ amount: 3 })).toThrow('node "f": param "expression": the expression must give a bool (true or false), but gave a double; use a comparison such as `amount > 100`');
  });

  it("refuses a string compared with a number", () => {
    expect(() => compile("country > 1").test({ country: "SA" })).toThrow(/no such overload: string > int/);
  });

  it("reports parse errors with line and column", () => {
    let error: unknown;
    try {
      compile("amount > 50000 &&\n  country !=");
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ExpressionSyntaxError);
    const syntax = error as ExpressionSyntaxError;
    expect(syntax.span.start).toEqual({ offset: 30, line: 2, column: 13 });
    expect(syntax.message).toBe('node "f": param "expression": syntax error at line 2, column 13: unexpected end of the expression (an operand or a closing bracket is missing)');
  });

  it("points at the offending token on the first line", () => {
    expect(() => compile("amount >> 5")).toThrow(/syntax error at line 1, column 9/);
  });

  it("refuses an empty expression", () => {
    expect(() => compile("  ")).toThrow('node "f": param "expression": the expression is empty');
  });
});

describe("checkExpression (validator and editor markers)", () => {
  it("reports unknown fields against the declared ones with a suggestion", () => {
    expect(checkExpression("amout > 5 && country == \"SA\"", site, ["amount", "country"])).toEqual([
      { severity: "error", code: "unknown-field", field: "amout", message: 'unknown field "amout" — did you mean "amount"?; the input records have "amount", "country"' },
    ]);
  });

  it("reports nothing when fields are unknown upstream", () => {
    expect(checkExpression("anything > 5", site)).toEqual([]);
  });

  it("returns syntax errors as diagnostics instead of throwing", () => {
    const [d] = checkExpression("1 +", site);
    expect(d?.severity).toBe("error");
    expect(d?.span?.start).toEqual({ offset: 3, line: 1, column: 4 });
  });
});

describe("closestName", () => {
  it("suggests near names only", () => {
    expect(closestName("filtr", ["filter", "map", "keyBy"])).toBe("filter");
    expect(closestName("keyby", ["filter", "map", "keyBy"])).toBe("keyBy");
    expect(closestName("zzzzzzzz", ["filter", "map"])).toBeUndefined();
  });
});

describe("fields named like CEL built-ins", () => {
  const site = { nodeId: "f", param: "expression" };
  it("reads them through `record`", () => {
    const e = compileExpression('record.type == "login" && amount > 10', site);
    expect(e.test({ type: "login", amount: 20 })).toBe(true);
    expect(e.test({ type: "payment", amount: 20 })).toBe(false);
    expect(e.referencedFields()).toEqual(["amount"]);
  });
  it("keeps a record's own field named `record`", () => {
    expect(compileExpression('record == "x"', site).test({ record: "x" })).toBe(true);
  });
  it("says how to read a bare `type` field", () => {
    const e = compileExpression('type == "login"', site);
    expect(() => e.test({ type: "login" })).toThrow(/write `record.type` to read the field named type/);
  });
});

describe("CEL budgets: an expression fails a record, never the process", () => {
  // The attack: a short expression whose lists grow `factor` times at every bind.
  const doubling = (levels: number, factor = 2): string => {
    let body = `l${levels}.size() > 0`;
    for (let i = levels; i >= 1; i--) body = `cel.bind(l${i}, ${Array(factor).fill(`l${i - 1}`).join(" + ")}, ${body})`;
    return `cel.bind(l0, [1, 2, 3, 4, 5, 6, 7, 8], ${body})`;
  };

  it("fails the record when an evaluation creates more than its allocation budget", () => {
    const e = compile(doubling(6, 8));
    expect(() => e.test({})).toThrow(ExpressionEvaluationError);
    expect(() => e.test({})).toThrow(/evaluation budget: it created more than 1000000 characters, list elements and map entries/);
  });

  it("fails the record when an evaluation takes more steps than its budget", () => {
    const tens = `[${Array.from({ length: 40 }, (_, i) => i).join(", ")}]`;
    const e = compile(`${tens}.map(a, ${tens}.map(b, ${tens}.map(c, a + b + c))).size() > 0`);
    expect(() => e.test({})).toThrow(/evaluation budget: it took more than 100000 steps/);
  });

  it("survives the 967-character expression that ran the runner out of memory", async () => {
    const { execFileSync } = await import("node:child_process");
    let source = doubling(10, 12); // 8 * 12^10 elements, within the nesting limit
    const padded = (pad: number) => `${source.slice(0, -1)} && "${"x".repeat(pad)}" != "")`;
    source = padded(967 - padded(0).length);
    expect(source).toHaveLength(967);
    // In a child with a small heap, so the unbudgeted evaluation dies there and not in the test.
    const script = `import { compileExpression } from ${JSON.stringify(new URL("./cel.ts", import.meta.url).pathname)};
      try { compileExpression(process.argv[1], { nodeId: "f", param: "expression" }).test({}); console.log("evaluated"); }
      catch (e) { console.log(e.name + ": " + e.message); }`;
    const out = execFileSync(process.execPath, ["--max-old-space-size=192", "--import", "tsx", "--input-type=module", "-e", script, source], { encoding: "utf8", timeout: 60_000 });
    expect(out).toMatch(/^ExpressionEvaluationError: node "f": param "expression": evaluation budget/);
  }, 70_000);

  it("runs matches() in linear time (RE2): a catastrophic backtracking pattern answers at once", () => {
    const e = compile('card.matches("(a+)+$")');
    const started = performance.now();
    expect(e.test({ card: `${"a".repeat(24)}b` })).toBe(false);
    expect(e.test({ card: `${"a".repeat(100_000)}b` })).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(e.test({ card: "aaa" })).toBe(true);
    expect(compile('card.matches("^c-[0-9]+$")').test({ card: "c-12" })).toBe(true);
  });

  it("refuses a pattern RE2 cannot run, at parse time when it is a literal and per record otherwise", () => {
    expect(() => compile('card.matches("(a)\\\\1")')).toThrow(/param "expression": .*regular expression/);
    expect(() => compile("card.matches(pattern)").test({ card: "a", pattern: "(?=a)" })).toThrow(ExpressionEvaluationError);
  });

  it("refuses an expression over the length limit or nested too deep, naming node and param", () => {
    expect(() => compile(`amount > ${"1".repeat(5)} || ${"x == 1 || ".repeat(1_200)}x == 2`)).toThrow(/node "f": param "expression": the expression is 1\d{4} characters long, over the limit of 10000/);
    expect(() => compile(`${"(".repeat(40)}1${")".repeat(40)} == 1`)).toThrow(/node "f": param "expression": the expression nests deeper than 32 levels/);
    expect(checkExpression("x".repeat(10_001), site)[0]?.message).toMatch(/over the limit of 10000/);
  });
});
