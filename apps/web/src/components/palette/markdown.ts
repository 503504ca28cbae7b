// The small Markdown the catalog's docs use, parsed into blocks and inline spans: paragraphs,
// `- ` lists, `#` headings, `code`, **bold** and *emphasis*. Rendered as React elements
// (Markdown.tsx), never as HTML strings, so operator docs cannot inject markup.

export type Inline = { kind: "text" | "code" | "strong" | "em"; text: string };
export type Block = { kind: "paragraph"; inlines: Inline[] } | { kind: "heading"; inlines: Inline[] } | { kind: "list"; items: Inline[][] };

const INLINE = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*?)\*|_([^_\s][^_]*?)_/g;

export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    const at = m.index ?? 0;
    // `_` emphasis only between word boundaries: snake_case_names stay text
    if (m[4] !== undefined && (/\w/.test(text.charAt(at - 1)) || /\w/.test(text.charAt(at + m[0].length)))) continue;
    if (at > last) out.push({ kind: "text", text: text.slice(last, at) });
    if (m[1] !== undefined) out.push({ kind: "code", text: m[1] });
    else if (m[2] !== undefined) out.push({ kind: "strong", text: m[2] });
    else out.push({ kind: "em", text: m[3] ?? m[4] ?? "" });
    last = at + m[0].length;
  }
  if (last < text.length) out.push({ kind: "text", text: text.slice(last) });
  return out;
}

const ITEM = /^\s*(?:[-*+]|\d+\.)\s+/;

export function parseMarkdown(source: string): Block[] {
  const blocks: Block[] = [];
  for (const chunk of source.replace(/\r\n/g, "\n").split(/\n\s*\n/)) {
    const lines = chunk.split("\n").filter((l) => l.trim() !== "");
    if (lines.length === 0) continue;
    const first = lines[0] as string;
    if (/^#{1,6}\s/.test(first)) {
      blocks.push({ kind: "heading", inlines: parseInline(first.replace(/^#+\s*/, "")) });
      if (lines.length > 1) blocks.push({ kind: "paragraph", inlines: parseInline(lines.slice(1).join(" ")) });
      continue;
    }
    const lead: string[] = [];
    const items: string[] = [];
    for (const line of lines) {
      if (ITEM.test(line)) items.push(line.replace(ITEM, ""));
      else if (items.length > 0) items[items.length - 1] += ` ${line.trim()}`;
      else lead.push(line.trim());
    }
    if (lead.length) blocks.push({ kind: "paragraph", inlines: parseInline(lead.join(" ")) });
    if (items.length) blocks.push({ kind: "list", items: items.map(parseInline) });
  }
  return blocks;
}
