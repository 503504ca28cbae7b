import { describe, expect, it } from "vitest";
import { catalog, getOperatorSpec, validatePipeline, type Issue } from "@keyflow/operators";
import { toOperatorView } from "../../catalog/operator-view";
import {
  describeDuration,
  describeParams,
  formatFieldValue,
  humanize,
  issueText,
  issuesForField,
  parseDurationInput,
  parseFieldInput,
  placeholderOf,
  timeZoneOptions,
  type FieldDescriptor,
} from "./fields";

function fieldsOf(type: string): Map<string, FieldDescriptor> {
  const spec = getOperatorSpec(type);
  if (!spec) throw new Error(`no operator ${type}`);
  return new Map(describeParams(toOperatorView(spec).paramsSchema).map((f) => [f.name, f]));
}

describe("describeParams: the catalog's params schemas → field descriptors", () => {
  it("gives velocity an integer, a duration, an enum with its default and a record field", () => {
    const f = fieldsOf("velocity");
    expect([...f.keys()]).toEqual(["threshold", "windowMs", "mode", "idField"]);
    expect(f.get("threshold")).toMatchObject({ kind: "integer", required: true, minimum: 1, label: "Threshold" });
    expect(f.get("threshold")).not.toHaveProperty("maximum"); // zod's safe-integer bound is noise
    expect(f.get("windowMs")).toMatchObject({ kind: "duration", required: true, label: "Window", key: "windowMs" });
    expect(f.get("windowMs")?.description).toContain("rolling window");
    expect(f.get("mode")).toMatchObject({ kind: "enum", options: ["ordered", "eager"], default: "ordered", required: false });
    expect(f.get("idField")).toMatchObject({ kind: "field", default: "id", label: "ID field" });
  });

  it("reads booleans, constants, string lists and optional durations of a Kafka source", () => {
    const f = fieldsOf("source.kafka");
    expect(f.get("bounded")).toMatchObject({ kind: "boolean", default: false });
    expect(f.get("format")).toMatchObject({ kind: "const", constValue: "json" });
    expect(f.get("brokers")).toMatchObject({ kind: "string-list", itemKind: "text", required: false });
    expect(f.get("fields")).toMatchObject({ kind: "string-list", itemKind: "field" });
    expect(f.get("maxOutOfOrdernessMs")).toMatchObject({ kind: "duration", required: false, label: "Max out of orderness" });
    expect(f.get("startFrom")).toMatchObject({ kind: "enum", options: ["earliest", "latest", "committed"] });
  });

  it("nests an object's fields (a window's aggregate) under dotted keys", () => {
    const aggregate = fieldsOf("window.tumbling").get("aggregate");
    expect(aggregate).toMatchObject({ kind: "object", required: true });
    expect(aggregate?.fields?.map((f) => [f.key, f.kind, f.required])).toEqual([
      ["aggregate.op", "enum", true],
      ["aggregate.field", "field", false],
    ]);
  });

  it("knows time zones, expressions, named expressions and code", () => {
    expect(fieldsOf("dailyTotal").get("timeZone")).toMatchObject({ kind: "time-zone", required: true, label: "Time zone" });
    expect(fieldsOf("filter").get("expression")).toMatchObject({ kind: "cel", required: true });
    expect(fieldsOf("map").get("assignments")).toMatchObject({ kind: "map", valueKind: "cel", keyPattern: "^[A-Za-z_][A-Za-z0-9_]*$" });
    expect(fieldsOf("process.custom").get("code")).toMatchObject({ kind: "code" });
    expect(fieldsOf("source.demo").get("eventsPerSecond")).toMatchObject({ kind: "number", exclusiveMinimum: 0, maximum: 100000 });
    expect(fieldsOf("topK").get("ttlMs")).toMatchObject({ kind: "duration", label: "TTL" });
    // A backtest range: offsets per partition as digits, instants as epoch ms or ISO-8601 text.
    expect(fieldsOf("source.kafka").get("startOffsets")).toMatchObject({ kind: "map", valueKind: "integer", keyPattern: "^\\d+$" });
    expect(fieldsOf("source.kafka").get("endTime")).toMatchObject({ kind: "text" });
  });

  it("describes every param of every operator in the catalog, none as raw JSON", () => {
    for (const spec of catalog) {
      const fields = describeParams(toOperatorView(spec).paramsSchema);
      const walk = (fs: readonly FieldDescriptor[]): FieldDescriptor[] => fs.flatMap((f) => [f, ...walk(f.fields ?? [])]);
      for (const f of walk(fields)) {
        expect(f.kind, `${spec.type}.${f.key}`).not.toBe("json");
        expect(f.description, `${spec.type}.${f.key} has no description`).toBeTruthy();
      }
    }
  });
});

describe("durations typed in the inspector", () => {
  it("keeps what the analyst wrote, and a bare number as milliseconds", () => {
    expect(parseDurationInput("10m")).toEqual({ value: "10m" });
    expect(parseDurationInput(" 1h30m ")).toEqual({ value: "1h30m" });
    expect(parseDurationInput("5000")).toEqual({ value: 5000 });
    expect(parseDurationInput("")).toEqual({ value: undefined });
  });

  it("says at once what is wrong with text that is not a duration, and keeps it for the validator", () => {
    expect(parseDurationInput("10x")).toEqual({ value: "10x", error: '"10x" is not a duration — write it like 250ms, 10s, 10m, 24h or 7d' });
    expect(parseDurationInput("ten minutes").error).toContain("is not a duration");
    expect(parseDurationInput("1.0005s").error).toContain("is not a duration");
  });

  it("explains a duration in milliseconds, and shows stored milliseconds the readable way", () => {
    expect(describeDuration("10m")).toBe("10m = 600,000 ms");
    expect(describeDuration(90_000)).toBe("1m30s = 90,000 ms");
    expect(describeDuration("soon")).toBeUndefined();
    const windowMs = fieldsOf("velocity").get("windowMs") as FieldDescriptor;
    expect(formatFieldValue(windowMs, 600_000)).toBe("10m");
    expect(formatFieldValue(windowMs, "24h")).toBe("24h");
    expect(placeholderOf(windowMs)).toBe("e.g. 10m");
  });
});

describe("other inputs", () => {
  const velocity = fieldsOf("velocity");
  const threshold = velocity.get("threshold") as FieldDescriptor;

  it("parses numbers and checks bounds at once", () => {
    expect(parseFieldInput(threshold, "5")).toEqual({ value: 5 });
    expect(parseFieldInput(threshold, "")).toEqual({ value: undefined });
    expect(parseFieldInput(threshold, "5.5")).toEqual({ value: 5.5, error: "must be a whole number" });
    expect(parseFieldInput(threshold, "0")).toEqual({ value: 0, error: "must be at least 1" });
    expect(parseFieldInput(threshold, "five")).toEqual({ value: "five", error: '"five" is not a number' });
    const rate = fieldsOf("source.demo").get("eventsPerSecond") as FieldDescriptor;
    expect(parseFieldInput(rate, "0").error).toBe("must be greater than 0");
    expect(parseFieldInput(rate, "2.5")).toEqual({ value: 2.5 });
  });

  it("splits string lists by line or comma", () => {
    const fields = fieldsOf("source.kafka").get("fields") as FieldDescriptor;
    expect(parseFieldInput(fields, "cardId\namount, ts\n\n")).toEqual({ value: ["cardId", "amount", "ts"] });
    expect(parseFieldInput(fields, " ")).toEqual({ value: undefined });
    expect(formatFieldValue(fields, ["a", "b"])).toBe("a\nb");
  });

  it("shows defaults as placeholders", () => {
    expect(placeholderOf(velocity.get("mode") as FieldDescriptor)).toBe("default: ordered");
    expect(placeholderOf(threshold)).toBe("");
  });

  it("humanizes param names", () => {
    expect(humanize("maxOutOfOrdernessMs", "duration")).toBe("Max out of orderness");
    expect(humanize("referenceKeyField")).toBe("Reference key field");
    expect(humanize("k")).toBe("K");
  });

  it("lists IANA time zones with UTC first", () => {
    const zones = timeZoneOptions();
    expect(zones[0]).toBe("UTC");
    expect(zones).toContain("Asia/Riyadh");
  });
});

describe("the validator's issues on fields", () => {
  const doc = {
    format: "keyflow.pipeline/v1",
    name: "p",
    nodes: [
      { id: "win", type: "window.tumbling", params: { sizeMs: "1x", aggregate: { op: "median" } } },
      { id: "vel", type: "velocity", params: { threshold: 1, windowMs: "10m" } },
    ],
    edges: [],
  };
  const issues = validatePipeline(doc).issues;

  it("finds each field's issues, nested ones under their object, and strips the subject", () => {
    const win = issues.filter((i) => i.nodeId === "win");
    const size = issuesForField({ key: "sizeMs" }, win);
    expect(size).toHaveLength(1);
    expect(issueText(size[0] as Issue)).toMatch(/^must be a positive duration/);
    expect(issuesForField({ key: "aggregate" }, win).map((i) => i.param)).toEqual(["aggregate.op"]);
    expect(issuesForField({ key: "aggregate.op" }, win)).toHaveLength(1);
    const threshold = issuesForField({ key: "threshold" }, issues.filter((i) => i.nodeId === "vel"));
    expect(threshold.map((i) => [i.severity, issueText(i)])).toEqual([["warning", "a threshold of 1 alerts on every record"]]);
  });

  it("keeps messages about the node whole, minus the node's name", () => {
    expect(issueText({ severity: "error", code: "missing-input", nodeId: "vel", message: 'node "vel": its input is not connected — connect a stream to it' })).toBe("its input is not connected — connect a stream to it");
    expect(issueText({ severity: "error", code: "no-sink", message: "pipeline: it has no sink" })).toBe("pipeline: it has no sink");
  });
});
