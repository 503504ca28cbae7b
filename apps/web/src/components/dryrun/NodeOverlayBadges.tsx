"use client";
// What the canvas pins on a node from the pipeline tools: "changed since v3" (the version running)
// and, after a dry run, the record count on each port; a click on a count opens that port's
// records in the dry-run panel. Renders nothing when there is nothing to pin.
import { useNodeOverlay } from "../versions/tools-context";
import { portBadges } from "./dryrun-view";

export function NodeOverlayBadges({ nodeId }: { nodeId: string }) {
  const overlay = useNodeOverlay(nodeId);
  const badges = portBadges(overlay.dryRun);
  if (overlay.changedSince === undefined && badges.length === 0) return null;
  return (
    <div className="kf-overlay nodrag nopan">
      {overlay.changedSince !== undefined ? (
        <span className="kf-overlay__changed" data-testid="node-changed" title={`New or changed since v${overlay.changedSince}, the version running now: the next deploy ships it`}>
          changed since v{overlay.changedSince}
        </span>
      ) : null}
      {badges.map((b) => (
        <button
          key={b.port}
          type="button"
          className={`kf-overlay__count${b.side ? " kf-overlay__count--side" : ""}${overlay.selectedPort === b.port ? " kf-overlay__count--selected" : ""}`}
          data-testid={`dryrun-count-${nodeId}-${b.port}`}
          title={`${b.count} record${b.count === 1 ? "" : "s"} on ${b.port}: show them`}
          onClick={(e) => {
            e.stopPropagation();
            overlay.selectPort(b.port);
          }}
        >
          <span className="kf-overlay__port">{b.port}</span> {b.count.toLocaleString("en")}
        </button>
      ))}
    </div>
  );
}
