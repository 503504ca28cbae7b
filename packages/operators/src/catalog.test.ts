import { describe, expect, it } from "vitest";
import { z } from "zod";
import { catalog, getOperatorSpec, indexCatalog, operatorTypes, paletteGroups, paletteSections } from "./catalog";
import type { OperatorSpec } from "./core/spec";

const specs: readonly OperatorSpec[] = catalog;

/** Unwraps optional/default/nullable/pipe wrappers to the schema that holds an object's shape. */
function objectShape(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  let s: z.ZodType = schema;
  for (let i = 0; i < 10; i++) {
    if (s instanceof z.ZodObject) return s.shape as Record<string, z.ZodType>;
    if (s instanceof z.ZodOptional || s instanceof z.ZodDefault || s instanceof z.ZodNullable) s = s.unwrap() as z.ZodType;
    else if (s instanceof z.ZodPipe) s = s.in as z.ZodType;
    else return undefined;
  }
  return undefined;
}

/** Dotted paths of every param field (nested objects included) that lacks a `.describe()`. */
function undescribedFields(schema: z.ZodType, prefix = ""): string[] {
  const shape = objectShape(schema);
  if (!shape) return [];
  return Object.entries(shape).flatMap(([name, field]) => {
    const path = prefix + name;
    const own = field.description ? [] : [path];
    return [...own, ...undescribedFields(field, `${path}.`)];
  });
}

describe("catalog", () => {
  it("has unique type ids", () => {
    expect(new Set(operatorTypes).size).toBe(operatorTypes.length);
    expect(() => indexCatalog([...specs, specs[0] as OperatorSpec])).toThrow(/listed twice/);
  });

  it.each(specs.map((s) => [s.type, s] as const))("%s: params are an object schema whose every field is described", (_type, spec) => {
    expect(objectShape(spec.params)).toBeDefined();
    expect(undescribedFields(spec.params)).toEqual([]);
  });

  it.each(specs.map((s) => [s.type, s] as const))("%s: has a title, a one-line summary and docs", (_type, spec) => {
    expect(spec.title.length).toBeGreaterThan(0);
    expect(spec.summary.length).toBeGreaterThan(0);
    expect(spec.summary).not.toContain("\n");
    expect(spec.docs.length).toBeGreaterThan(80);
    expect(spec.version).toBeGreaterThanOrEqual(1);
  });

  it.each(specs.map((s) => [s.type, s] as const))("%s: ports fit its category", (_type, spec) => {
    if (spec.category === "source") {
      expect(spec.inputs).toEqual([]);
      expect(spec.create).toBeUndefined();
    } else {
      expect(spec.inputs.some((p) => p.id === "in")).toBe(true);
    }
    if (spec.category === "sink") expect(spec.outputs).toEqual([]);
    else expect(spec.outputs.filter((p) => !p.side).map((p) => p.id)).toEqual(["out"]);
    if (spec.category !== "source" && spec.category !== "sink") expect(spec.create).toBeTypeOf("function");
  });

  it.each(specs.map((s) => [s.type, s] as const))("%s: JSON Schema for the inspector form can be generated", (_type, spec) => {
    const schema = z.toJSONSchema(spec.params, { io: "input", unrepresentable: "any" });
    expect(schema.type).toBe("object");
  });

  it("finds specs by type", () => {
    expect(getOperatorSpec("filter")?.type).toBe("filter");
    expect(getOperatorSpec("nope")).toBeUndefined();
  });

  it("shows every spec in exactly one palette section, sources first and sinks last", () => {
    const shown = paletteGroups().flatMap((g) => g.specs.map((s) => s.type));
    expect([...shown].sort()).toEqual([...operatorTypes].sort());
    expect(paletteSections[0]?.id).toBe("sources");
    expect(paletteSections.at(-1)?.id).toBe("sinks");
  });

  it("includes the Foundation operators", () => {
    for (const type of ["source.kafka", "source.file", "source.demo", "keyBy", "filter", "map", "union", "sink.kafka", "sink.file"]) {
      expect(operatorTypes).toContain(type);
    }
  });
});
