import { describe, expect, it } from "vitest";
import { catalog } from "@keyflow/operators";
import { toOperatorView } from "../../catalog/operator-view";
import { parseInline, parseMarkdown } from "./markdown";
import { groupOperators, searchOperators } from "./search";

const views = catalog.map((spec) => toOperatorView(spec));

describe("palette groups", () => {
  it("follow the palette's sections, from sources to sinks, with every operator once", () => {
    const groups = groupOperators(views);
    expect(groups.map((g) => g.section.id)).toEqual(["sources", "keying", "windows", "patterns", "enrichment", "custom", "sinks"]);
    expect(groups[0]?.operators.map((o) => o.type)).toEqual(["source.kafka", "source.file", "source.demo"]);
    expect(groups.flatMap((g) => g.operators).length).toBe(views.length);
  });
});

describe("palette search", () => {
  const types = (q: string) => searchOperators(views, q).map((o) => o.type);

  it("puts the exact match first", () => {
    expect(types("velocity")[0]).toBe("velocity");
    expect(types("keyBy")[0]).toBe("keyBy");
    expect(types("key by")[0]).toBe("keyBy");
  });

  it("matches every word, in the type, title, summary or section", () => {
    expect(types("kafka")).toEqual(expect.arrayContaining(["source.kafka", "sink.kafka"]));
    expect(types("sink file")[0]).toBe("sink.file");
    expect(types("source.file")[0]).toBe("source.file");
    expect(types("tumbling")[0]).toBe("window.tumbling");
    expect(types("zzz")).toEqual([]);
  });

  it("lists everything in palette order for an empty query", () => {
    expect(types("  ")).toHaveLength(views.length);
  });
});

describe("docs markdown", () => {
  it("parses code, bold and emphasis, and leaves snake_case alone", () => {
    expect(parseInline("counts **(t − windowMs, t]**, with `threshold` at *t*; my_field_name")).toEqual([
      { kind: "text", text: "counts " },
      { kind: "strong", text: "(t − windowMs, t]" },
      { kind: "text", text: ", with " },
      { kind: "code", text: "threshold" },
      { kind: "text", text: " at " },
      { kind: "em", text: "t" },
      { kind: "text", text: "; my_field_name" },
    ]);
  });

  it("splits paragraphs and lists, joining wrapped lines", () => {
    const blocks = parseMarkdown("First line\nwraps here.\n\n**Modes.**\n- `ordered`: waits\n  for the watermark.\n- `eager`: decides now.\n\n# Heading");
    expect(blocks.map((b) => b.kind)).toEqual(["paragraph", "paragraph", "list", "heading"]);
    expect(blocks[0]).toEqual({ kind: "paragraph", inlines: [{ kind: "text", text: "First line wraps here." }] });
    const list = blocks[2];
    expect(list?.kind === "list" && list.items[0]).toEqual([
      { kind: "code", text: "ordered" },
      { kind: "text", text: ": waits for the watermark." },
    ]);
  });

  it("parses every operator's docs without losing text", () => {
    for (const v of views) {
      const text = parseMarkdown(v.docs)
        .flatMap((b) => (b.kind === "list" ? b.items.flat() : b.inlines))
        .map((i) => i.text)
        .join("");
      expect(text.length, v.type).toBeGreaterThan(v.docs.length * 0.8);
    }
  });
});
