// Promotion requests: "run this version in enforcement", asked by an analyst and decided by an
// approver who is not the requester. A request is tied to the version's graph hash at the time it
// was asked; saving a newer version of the pipeline voids pending and approved requests for other
// graphs, so an approval always means "this exact graph". Every step is audited by the caller's
// transaction (the request/decision and its audit record commit together).
import { TRPCError } from "@trpc/server";
import { appendAuditEvent, type PrismaClient } from "@keyflow/db";
import type { SessionUser } from "../auth/roles";
import { notFound } from "../errors";

const select = { id: true, pipelineId: true, versionId: true, graphHash: true, status: true, requestedBy: true, reason: true, createdAt: true, decidedBy: true, decidedAt: true, comment: true, version: { select: { number: true } } } as const;

export async function requestPromotion(prisma: PrismaClient, user: SessionUser, input: { versionId: string; reason: string }) {
  const version = await prisma.pipelineVersion.findUnique({ where: { id: input.versionId }, select: { id: true, number: true, pipelineId: true, graphHash: true } });
  if (!version) throw notFound("version", input.versionId);
  return prisma.$transaction(async (tx) => {
    const open = await tx.promotionRequest.findFirst({ where: { versionId: version.id, status: { in: ["pending", "approved"] } }, select: { id: true, status: true } });
    if (open) throw new TRPCError({ code: "CONFLICT", message: `version ${version.number} already has a ${open.status} promotion request (${open.id})` });
    const request = await tx.promotionRequest.create({ data: { pipelineId: version.pipelineId, versionId: version.id, graphHash: version.graphHash, requestedBy: user.email, reason: input.reason }, select });
    await appendAuditEvent(tx, { actor: user.email, action: "request", subjectType: "promotion", subjectId: request.id, details: { pipelineId: version.pipelineId, versionId: version.id, number: version.number, graphHash: version.graphHash }, reason: input.reason || null });
    return request;
  });
}

export async function decidePromotion(prisma: PrismaClient, user: SessionUser, input: { requestId: string; decision: "approve" | "reject"; comment: string }) {
  return prisma.$transaction(async (tx) => {
    // Locked: two approvers deciding at once get one decision, not two.
    const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM promotion_requests WHERE id = ${input.requestId} FOR UPDATE`;
    if (locked.length === 0) throw notFound("promotion request", input.requestId);
    const request = await tx.promotionRequest.findUniqueOrThrow({ where: { id: input.requestId }, select: { ...select, version: { select: { number: true, graphHash: true } } } });
    if (request.requestedBy === user.email) {
      throw new TRPCError({ code: "FORBIDDEN", message: `${user.email} asked for this promotion and cannot ${input.decision} it: another approver must decide` });
    }
    if (request.status !== "pending") throw new TRPCError({ code: "PRECONDITION_FAILED", message: `promotion request ${request.id} is ${request.status}, not pending` });
    // Versions are immutable, so this holds unless the row was tampered with; checked anyway, because it is what the approval means.
    if (request.version.graphHash !== request.graphHash) {
      throw new TRPCError({ code: "PRECONDITION_FAILED", message: `version ${request.version.number} no longer has the graph the request was made for (${request.graphHash.slice(0, 12)}…)` });
    }
    const status = input.decision === "approve" ? "approved" : "rejected";
    const decided = await tx.promotionRequest.update({ where: { id: request.id }, data: { status, decidedBy: user.email, decidedAt: new Date(), comment: input.comment }, select });
    await appendAuditEvent(tx, {
      actor: user.email,
      action: input.decision,
      subjectType: "promotion",
      subjectId: request.id,
      details: { pipelineId: request.pipelineId, versionId: request.versionId, number: request.version.number, graphHash: request.graphHash, requestedBy: request.requestedBy },
      reason: input.comment || null,
    });
    return decided;
  });
}

/** Called after a version is saved: requests for any other graph of the pipeline are void. */
export async function voidStalePromotions(prisma: PrismaClient, actor: string, pipelineId: string, graphHash: string): Promise<number> {
  return prisma.$transaction(async (tx) => {
    const stale = await tx.promotionRequest.findMany({ where: { pipelineId, status: { in: ["pending", "approved"] }, graphHash: { not: graphHash } }, select: { id: true, status: true, versionId: true } });
    for (const request of stale) {
      await tx.promotionRequest.update({ where: { id: request.id }, data: { status: "void" } });
      await appendAuditEvent(tx, { actor, action: "void", subjectType: "promotion", subjectId: request.id, details: { pipelineId, versionId: request.versionId, voided: true, was: request.status }, reason: "a newer version was saved: the request no longer matches the graph that would run" });
    }
    return stale.length;
  });
}

export async function listPromotions(prisma: PrismaClient, pipelineId: string) {
  return prisma.promotionRequest.findMany({ where: { pipelineId }, orderBy: { createdAt: "desc" }, select });
}

/**
 * Enforcement needs an approved request for exactly this version's graph. Returns that request;
 * throws PRECONDITION_FAILED naming what is missing. (The seamless switch of a warm shadow
 * deployment at a checkpoint boundary is not built yet: an enforcing deploy starts a job.)
 */
export async function approvedPromotion(prisma: PrismaClient, versionId: string) {
  const version = await prisma.pipelineVersion.findUnique({ where: { id: versionId }, select: { number: true, graphHash: true } });
  if (!version) throw notFound("version", versionId);
  const approved = await prisma.promotionRequest.findFirst({ where: { versionId, status: "approved", graphHash: version.graphHash }, orderBy: { decidedAt: "desc" }, select: { id: true, requestedBy: true, decidedBy: true } });
  if (!approved) {
    throw new TRPCError({ code: "PRECONDITION_FAILED", message: `version ${version.number} has no approved promotion request for its graph (${version.graphHash.slice(0, 12)}…): ask for one and have another approver approve it` });
  }
  return approved;
}
