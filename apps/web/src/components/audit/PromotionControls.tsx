// Pieces of the approver's bundle in the promotion panel: the state check of a version against the
// running rule job's newest checkpoint, and the approver's choice of what a version that stops
// enforcing becomes (shadow, its state kept warm, or stopped). Presentational: PromotionPanel queries.

/** promotion.compat as the panel receives it. */
export interface StateCheckResult {
  ruleJobId: string | null;
  checkpoint: string | null;
  compatible: boolean;
  problems: string[];
  dropped: string[];
  note: string | null;
}

/** The last folder of a checkpoint path (`chk-12`): enough to tell which one was read. */
function checkpointName(path: string): string {
  return path.split(/[\\/]/).filter(Boolean).pop() ?? path;
}

export function StateCheck({ version, check, error }: { version: number; check: StateCheckResult | undefined; error: string | null }) {
  if (error !== null) {
    return (
      <p className="kf-promotion__check" data-testid="promotion-compat" data-compatible="unknown" role="alert">
        State check of v{version}: could not be made ({error}); the server refuses an approval it cannot check.
      </p>
    );
  }
  if (!check) {
    return (
      <p className="kf-promotion__check" data-testid="promotion-compat" data-compatible="pending">
        State check of v{version}: checking against the rule job&apos;s checkpoint…
      </p>
    );
  }
  if (check.note !== null && check.ruleJobId === null) {
    return (
      <p className="kf-promotion__check" data-testid="promotion-compat" data-compatible="yes">
        State check of v{version}: {check.note}
      </p>
    );
  }
  const against = `rule job ${check.ruleJobId ?? "?"}${check.checkpoint ? `, checkpoint ${checkpointName(check.checkpoint)}` : ""}`;
  if (!check.compatible) {
    return (
      <div className="kf-promotion__check kf-promotion__check--bad" data-testid="promotion-compat" data-compatible="no" role="alert">
        <p>
          State check of v{version}: incompatible with {against}; it cannot be approved:
        </p>
        <ul>
          {check.problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      </div>
    );
  }
  return (
    <p className="kf-promotion__check" data-testid="promotion-compat" data-compatible="yes">
      State check of v{version}: compatible with {against}
      {check.checkpoint === null ? " (no checkpoint yet: it starts empty)" : ""}
      {check.dropped.length > 0 ? `; the state of ${check.dropped.join(", ")} would be dropped` : ""}
    </p>
  );
}

export type AfterEnforcing = "shadow" | "stopped";

/** What the version(s) named in `who` become when enforcement moves away from them. */
export function AfterEnforcingChoice({ who, value, onChange, testId }: { who: string; value: AfterEnforcing; onChange: (value: AfterEnforcing) => void; testId: string }) {
  return (
    <label className="kf-promotion__choice">
      then {who}
      <select value={value} onChange={(e) => onChange(e.target.value === "stopped" ? "stopped" : "shadow")} data-testid={testId} aria-label={`what ${who} becomes`}>
        <option value="shadow">drops back to shadow</option>
        <option value="stopped">stops</option>
      </select>
    </label>
  );
}
