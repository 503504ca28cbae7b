// @vitest-environment happy-dom
// The inspector's form as it renders: fields generated from real catalog specs (velocity,
// dailyTotal, window.tumbling), typed into as an analyst would, with the values they store and the
// errors they show, at once (what was typed) and from the shared validator (the node's params).
import { useState } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { getOperatorSpec, validatePipeline, type Issue } from "@keyflow/operators";
import { toOperatorView } from "../../catalog/operator-view";
import { describeParams, issuesForField } from "./fields";
import { ParamField } from "./ParamField";

afterEach(cleanup);

function setAt(params: Record<string, unknown>, path: readonly string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  if (head === undefined) return params;
  const next = { ...params };
  if (rest.length === 0) {
    if (value === undefined) delete next[head];
    else next[head] = value;
    return next;
  }
  const child = next[head];
  next[head] = setAt(child !== null && typeof child === "object" && !Array.isArray(child) ? (child as Record<string, unknown>) : {}, rest, value);
  return next;
}

/** The node's param issues as the inspector shows them: its params alone, through the shared validator. */
function paramIssues(type: string, params: Record<string, unknown>): Issue[] {
  const r = validatePipeline({ format: "keyflow.pipeline/v1", name: "form", nodes: [{ id: "n", type, params }], edges: [] });
  return r.issues.filter((i) => i.nodeId === "n" && (i.code === "bad-param" || i.code === "unknown-param"));
}

/** One node's form: every field of its operator, params kept in state as the editor store would. */
function Form({ type, initial = {}, onParams }: { type: string; initial?: Record<string, unknown>; onParams: (params: Record<string, unknown>, path: readonly string[], value: unknown) => void }) {
  const spec = getOperatorSpec(type);
  if (!spec) throw new Error(`no operator ${type}`);
  const [fields] = useState(() => describeParams(toOperatorView(spec).paramsSchema));
  const [params, setParams] = useState(initial);
  const issues = paramIssues(type, params);
  return (
    <div>
      {fields.map((field) => (
        <ParamField
          key={field.key}
          field={field}
          params={params}
          onChange={(path, value) => {
            const next = setAt(params, path, value);
            setParams(next);
            onParams(next, path, value);
          }}
          issuesFor={(f) => issuesForField(f, issues)}
          disabled={false}
          nodeId="n"
          operatorType={type}
        />
      ))}
    </div>
  );
}

const type = (testId: string, text: string) => fireEvent.change(screen.getByTestId(testId), { target: { value: text } });
const errorsOf = (key: string) => screen.queryAllByTestId(`param-error-${key}`).map((e) => e.textContent);

describe("the inspector's generated form (velocity)", () => {
  it("renders a labelled control per param, required ones marked, with the schema's default", () => {
    render(<Form type="velocity" onParams={() => undefined} />);
    expect(screen.getByLabelText(/^Threshold/)).toBe(screen.getByTestId("param-threshold"));
    expect(screen.getByLabelText(/^Window/)).toBe(screen.getByTestId("param-windowMs"));
    const mode = screen.getByTestId("param-mode") as HTMLSelectElement;
    expect(mode.tagName).toBe("SELECT");
    expect([...mode.options].map((o) => o.textContent)).toEqual(["Default (ordered)", "ordered (default)", "eager"]);
    // Nothing typed yet: the validator's messages on the empty params, one per field.
    expect(errorsOf("threshold")).toHaveLength(1);
    expect(errorsOf("windowMs")).toEqual([expect.stringContaining("must be a positive duration")]);
    expect(errorsOf("mode")).toEqual([]);
  });

  it("stores a number for the threshold and the duration as typed, with its value in ms shown", () => {
    const onParams = vi.fn();
    render(<Form type="velocity" onParams={onParams} />);
    type("param-threshold", "3");
    expect(onParams).toHaveBeenLastCalledWith({ threshold: 3 }, ["threshold"], 3);
    type("param-windowMs", "10m");
    expect(onParams).toHaveBeenLastCalledWith({ threshold: 3, windowMs: "10m" }, ["windowMs"], "10m");
    expect(screen.getByTestId("param-windowMs-hint").textContent).toBe("10m = 600,000 ms");
    expect(errorsOf("threshold")).toEqual([]);
    expect(errorsOf("windowMs")).toEqual([]);
  });

  it("shows a per-field error at once for a duration that does not parse, and clears it when fixed", () => {
    const onParams = vi.fn();
    render(<Form type="velocity" initial={{ threshold: 3, windowMs: "1m" }} onParams={onParams} />);
    type("param-windowMs", "10 parsecs");
    // Stored as typed, so the validator (and the problems panel) see it too.
    expect(onParams).toHaveBeenLastCalledWith({ threshold: 3, windowMs: "10 parsecs" }, ["windowMs"], "10 parsecs");
    expect(errorsOf("windowMs")).toEqual([expect.stringMatching(/^"10 parsecs" is not a duration — write it like /)]);
    expect(screen.queryByTestId("param-windowMs-hint")).toBeNull();
    expect(screen.getByTestId("param-error-windowMs").getAttribute("data-severity")).toBe("error");
    type("param-windowMs", "24h");
    expect(errorsOf("windowMs")).toEqual([]);
    expect(screen.getByTestId("param-windowMs-hint").textContent).toBe("1d = 86,400,000 ms");
  });

  it("checks numbers as typed: not a number, not whole, below the minimum", () => {
    render(<Form type="velocity" initial={{ threshold: 3, windowMs: "1m" }} onParams={() => undefined} />);
    type("param-threshold", "three");
    expect(errorsOf("threshold")).toEqual(['"three" is not a number']);
    type("param-threshold", "2.5");
    expect(errorsOf("threshold")).toEqual(["must be a whole number"]);
    type("param-threshold", "0");
    expect(errorsOf("threshold")).toEqual(["must be at least 1"]);
    type("param-threshold", "4");
    expect(errorsOf("threshold")).toEqual([]);
  });

  it("shows the shared validator's message for a bad value it was given (not typed here)", () => {
    const onParams = vi.fn();
    render(<Form type="velocity" initial={{ threshold: 0, windowMs: "1m" }} onParams={onParams} />);
    const [issue] = paramIssues("velocity", { threshold: 0, windowMs: "1m" });
    expect(issue).toMatchObject({ code: "bad-param", param: "threshold", severity: "error" });
    const shown = errorsOf("threshold");
    expect(shown).toHaveLength(1);
    expect(issue?.message).toContain(shown[0]);
    expect(shown[0]).not.toMatch(/^node "/); // the subject is the field itself
  });

  it("sets the enum from its select, and back to the default", () => {
    const onParams = vi.fn();
    render(<Form type="velocity" initial={{ threshold: 3, windowMs: "1m" }} onParams={onParams} />);
    fireEvent.change(screen.getByTestId("param-mode"), { target: { value: "eager" } });
    expect(onParams).toHaveBeenLastCalledWith({ threshold: 3, windowMs: "1m", mode: "eager" }, ["mode"], "eager");
    fireEvent.change(screen.getByTestId("param-mode"), { target: { value: "" } });
    expect(onParams).toHaveBeenLastCalledWith({ threshold: 3, windowMs: "1m" }, ["mode"], undefined);
  });
});

describe("the inspector's generated form (dailyTotal)", () => {
  it("offers IANA time zones in a select, UTC first, and stores the one chosen", () => {
    const onParams = vi.fn();
    render(<Form type="dailyTotal" onParams={onParams} />);
    const select = screen.getByTestId("param-timeZone") as HTMLSelectElement;
    expect(select.tagName).toBe("SELECT");
    const options = [...select.options].map((o) => o.value);
    expect(options.slice(0, 2)).toEqual(["", "UTC"]);
    expect(options).toContain("Europe/Paris");
    expect(within(select).getByText("Choose a time zone…")).toBeTruthy();
    expect(errorsOf("timeZone")).toHaveLength(1);
    fireEvent.change(select, { target: { value: "Europe/Paris" } });
    expect(onParams).toHaveBeenLastCalledWith(expect.objectContaining({ timeZone: "Europe/Paris" }), ["timeZone"], "Europe/Paris");
    expect(select.value).toBe("Europe/Paris");
    expect(errorsOf("timeZone")).toEqual([]);
  });
});

describe("length limits of expression and code fields", () => {
  const fiveMb = "x".repeat(5 * 1024 * 1024);

  it("refuses a 5 MB paste into an expression with a message; nothing is stored", () => {
    const onParams = vi.fn();
    render(<Form type="filter" initial={{ expression: "amount > 1" }} onParams={onParams} />);
    type("param-expression", fiveMb);
    expect(onParams).not.toHaveBeenCalled();
    expect(errorsOf("expression")).toEqual([expect.stringMatching(/^refused: that would make the expression 5,242,880 characters long; an expression holds at most 10,000/)]);
    expect((screen.getByTestId("param-expression") as HTMLTextAreaElement).value).toBe("amount > 1");
    type("param-expression", "amount > 2");
    expect(onParams).toHaveBeenLastCalledWith({ expression: "amount > 2" }, ["expression"], "amount > 2");
    expect(errorsOf("expression")).toEqual([]);
  });

  it("refuses a 5 MB paste into process.custom's code with a message; nothing is stored", () => {
    const onParams = vi.fn();
    render(<Form type="process.custom" onParams={onParams} />);
    type("param-code", fiveMb);
    expect(onParams).not.toHaveBeenCalled();
    expect(errorsOf("code")).toEqual([expect.stringMatching(/^refused: that would make the code 5,242,880 characters long; a code field holds at most 200,000/)]);
  });
});
