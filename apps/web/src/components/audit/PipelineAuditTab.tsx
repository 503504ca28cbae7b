"use client";
// A pipeline's Audit tab: its promotion requests, then its audit trail.
import type { PipelineDetail } from "../../trpc/types";
import { AuditView } from "./AuditView";
import { PromotionPanel } from "./PromotionPanel";

export function PipelineAuditTab({ pipeline }: { pipeline: PipelineDetail }) {
  return (
    <div className="kf-audit-tab" data-testid="pipeline-audit-tab">
      <PromotionPanel pipeline={pipeline} />
      <AuditView fixedPipelineId={pipeline.id} compact />
    </div>
  );
}
