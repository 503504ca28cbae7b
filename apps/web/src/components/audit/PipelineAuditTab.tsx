"use client";
// A pipeline's Audit tab: its promotion requests, its backtests, then its audit trail.
import type { PipelineDetail } from "../../trpc/types";
import { BacktestPanel } from "../backtests/BacktestPanel";
import { AuditView } from "./AuditView";
import { PromotionPanel } from "./PromotionPanel";

export function PipelineAuditTab({ pipeline }: { pipeline: PipelineDetail }) {
  return (
    <div className="kf-audit-tab" data-testid="pipeline-audit-tab">
      <PromotionPanel pipeline={pipeline} />
      <BacktestPanel pipeline={pipeline} />
      <AuditView fixedPipelineId={pipeline.id} compact />
    </div>
  );
}
