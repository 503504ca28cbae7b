-- CreateEnum
CREATE TYPE "promotion_status" AS ENUM ('pending', 'approved', 'rejected', 'void');

-- CreateTable
CREATE TABLE "promotion_requests" (
    "id" TEXT NOT NULL,
    "pipeline_id" TEXT NOT NULL,
    "version_id" TEXT NOT NULL,
    "graph_hash" TEXT NOT NULL,
    "status" "promotion_status" NOT NULL DEFAULT 'pending',
    "requested_by" TEXT NOT NULL,
    "reason" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "decided_by" TEXT,
    "decided_at" TIMESTAMPTZ(3),
    "comment" TEXT,

    CONSTRAINT "promotion_requests_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "promotion_requests_pipeline_id_created_at_idx" ON "promotion_requests"("pipeline_id", "created_at");

-- CreateIndex
CREATE INDEX "promotion_requests_status_idx" ON "promotion_requests"("status");

-- AddForeignKey
ALTER TABLE "promotion_requests" ADD CONSTRAINT "promotion_requests_pipeline_id_fkey" FOREIGN KEY ("pipeline_id") REFERENCES "pipelines"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "promotion_requests" ADD CONSTRAINT "promotion_requests_version_id_fkey" FOREIGN KEY ("version_id") REFERENCES "pipeline_versions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

