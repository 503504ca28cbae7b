// The palette's model: the catalog grouped in the palette's sections, and the search that ranks
// operators by how well they match what the analyst typed. Framework-free.
import { paletteSections, type PaletteSection } from "@keyflow/operators";
import type { OperatorView } from "../../catalog/operator-view";

export interface PaletteGroup {
  section: PaletteSection;
  operators: OperatorView[];
}

/** The operators in palette order, grouped by section (empty sections left out). */
export function groupOperators(operators: readonly OperatorView[]): PaletteGroup[] {
  return paletteSections
    .map((section) => ({ section, operators: section.categories.flatMap((c) => operators.filter((op) => op.category === c)) }))
    .filter((g) => g.operators.length > 0);
}

const sectionOf = new Map(paletteSections.flatMap((s) => s.categories.map((c) => [c, s.title] as const)));

/**
 * Operators matching every word of `query` (in type, title, summary or section), best first:
 * the exact type or title, then prefixes, then words in the title, then anywhere.
 */
export function searchOperators(operators: readonly OperatorView[], query: string): OperatorView[] {
  const words = query.toLowerCase().split(/[\s.]+/).filter(Boolean);
  if (words.length === 0) return groupOperators(operators).flatMap((g) => g.operators);
  const q = query.trim().toLowerCase();
  const scored = operators.flatMap((op, index) => {
    const type = op.type.toLowerCase();
    const title = op.title.toLowerCase();
    const hay = `${type} ${title} ${op.summary.toLowerCase()} ${(sectionOf.get(op.category) ?? "").toLowerCase()}`;
    if (!words.every((w) => hay.includes(w))) return [];
    let score = 0;
    if (type === q || title === q) score = 100;
    else if (type.startsWith(q) || title.startsWith(q)) score = 80;
    else if (words.every((w) => `${type} ${title}`.includes(w))) score = 60;
    else if (words.some((w) => `${type} ${title}`.includes(w))) score = 40;
    return [{ op, score, index }];
  });
  return scored.sort((a, b) => b.score - a.score || a.index - b.index).map((s) => s.op);
}
