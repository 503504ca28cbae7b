// Renders the catalog's docs Markdown (see markdown.ts) as React elements.
import { memo, useMemo, type ReactNode } from "react";
import { parseInline, parseMarkdown, type Inline } from "./markdown";

function renderInlines(inlines: readonly Inline[]): ReactNode[] {
  return inlines.map((span, i) => {
    switch (span.kind) {
      case "code":
        return <code key={i}>{span.text}</code>;
      case "strong":
        return <strong key={i}>{span.text}</strong>;
      case "em":
        return <em key={i}>{span.text}</em>;
      default:
        return span.text;
    }
  });
}

function MarkdownView({ source, className }: { source: string; className?: string }) {
  const blocks = useMemo(() => parseMarkdown(source), [source]);
  return (
    <div className={className ? `kf-md ${className}` : "kf-md"}>
      {blocks.map((block, i) => {
        if (block.kind === "heading") return <h4 key={i}>{renderInlines(block.inlines)}</h4>;
        if (block.kind === "list") {
          return (
            <ul key={i}>
              {block.items.map((item, j) => (
                <li key={j}>{renderInlines(item)}</li>
              ))}
            </ul>
          );
        }
        return <p key={i}>{renderInlines(block.inlines)}</p>;
      })}
    </div>
  );
}

export const Markdown = memo(MarkdownView);

/** One line of inline Markdown (param descriptions: `code` spans). */
export function InlineMarkdown({ text }: { text: string }) {
  const inlines = useMemo(() => parseInline(text), [text]);
  return <>{renderInlines(inlines)}</>;
}
