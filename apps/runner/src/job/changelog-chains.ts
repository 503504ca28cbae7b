// Changelog checkpoints' chains, one per state file (a single-threaded job's `state.bin`, each keyed
// subtask's file of a parallel job): the written snapshots its next checkpoint builds on, a whole
// one then changes, and when a whole state is due in the background (JobDriver.startBaseWrite).
import type { ChangelogSnapshot } from "@keyflow/operators";
import { z } from "zod";

/** One written snapshot of a changelog chain: a file relative to the checkpoint folder's location. */
export interface ChangelogLink {
  file: string;
  /** The checkpoint it was written for; a background whole state: the last checkpoint snapshotted before it. */
  id: number;
  bytes: number;
}

/** What one state file's checkpoint takes: its snapshot's kind and the chain it builds on. */
export interface TaskChangelog {
  mode: ChangelogSnapshot;
  chain: ChangelogLink[] | undefined;
}

/**
 * A changelog checkpoint's state file holds the keyed state changed since the checkpoint before,
 * and a restore replays `chain` (files relative to the checkpoint's folder, oldest first: a whole
 * snapshot, then the changes of the checkpoints between) and then that file (resolveChangelog).
 */
export const changelogSchema = z.object({ chain: z.array(z.string()).min(1) });

/** The files a checkpoint's metadata (parsed JSON, not yet checked) lists in its changelog chains, relative to its folder. */
export function changelogChains(raw: unknown): string[] {
  const m = z.object({ changelog: changelogSchema.optional(), tasks: z.array(z.object({ changelog: changelogSchema.optional() })).optional() }).parse(raw);
  return [...(m.changelog?.chain ?? []), ...(m.tasks ?? []).flatMap((t) => t.changelog?.chain ?? [])];
}

/** A checkpoint's metadata names its chain's files relative to its own folder (CheckpointMeta.changelog). */
export function chainMeta(chain: readonly ChangelogLink[]): { chain: string[] } {
  return { chain: chain.map((l) => `../${l.file}`) };
}

/**
 * A whole state is written in the background once the changes since the last one add up to more
 * than it (a restore would read more changes than state), or once a chain has this many links.
 */
const MAX_CHANGELOG_LINKS = 100;

export class ChangelogChains {
  /** By state file; none until one is written whole (at the start, after a restore, after a checkpoint that failed). */
  private readonly chains = new Map<string, ChangelogLink[]>();
  /** Whole states written in the background while their file's checkpoint was in flight, for its chain to start from. */
  private readonly writtenBases = new Map<string, ChangelogLink>();

  /** The snapshot `file`'s next checkpoint takes. Its chain is broken until that one is written: a checkpoint that fails leaves the next one to start again. */
  take(file: string): TaskChangelog {
    const chain = this.chains.get(file);
    this.chains.delete(file);
    return chain === undefined ? { mode: "whole", chain: undefined } : { mode: "changes", chain };
  }

  /** `file`'s snapshot taken as `c` is written as `link`: the next one builds on it (and on a whole state written meanwhile). */
  written(file: string, c: TaskChangelog, link: ChangelogLink): void {
    this.chains.set(file, c.mode === "whole" || c.chain === undefined ? [link] : [...c.chain, link]);
    const base = this.writtenBases.get(file);
    this.writtenBases.delete(file);
    if (base !== undefined && c.mode !== "whole") this.startAt(file, base);
  }

  /**
   * A whole state written in the background starts `file`'s chain, when it is newer than the chain's
   * start: the changes of the checkpoints after the one it followed go on over it (a change holds a
   * key's whole value, so replaying changes it already has is harmless; see resolveChangelog).
   */
  startAt(file: string, base: ChangelogLink): void {
    const chain = this.chains.get(file);
    if (chain === undefined) {
      this.writtenBases.set(file, base); // a checkpoint is in flight: its chain takes it once written
      return;
    }
    if ((chain[0]?.id ?? Number.POSITIVE_INFINITY) > base.id) return; // a whole checkpoint came after it
    this.chains.set(file, [base, ...chain.filter((l, i) => i > 0 && l.id > base.id)]);
  }

  /** Whether a whole state is due: the chains' changes outweigh the states they build on, or a chain is too long. */
  baseDue(): boolean {
    let bases = 0;
    let changes = 0;
    for (const chain of this.chains.values()) {
      if (chain.length > MAX_CHANGELOG_LINKS) return true;
      bases += chain[0]?.bytes ?? 0;
      for (let i = 1; i < chain.length; i++) changes += chain[i]!.bytes;
    }
    return changes > bases;
  }

  /** The state files whose chains a whole state would start again. */
  files(): string[] {
    return [...this.chains.keys()];
  }
}
