-- Backtests (a version replayed over a recorded range as a bounded job), the finished status of bounded
-- jobs with their final counts, and in-app notifications for approvers. Additive only.
-- AlterEnum
ALTER TYPE "deployment_status" ADD VALUE 'finished';

-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "final_metrics" JSONB;

-- CreateTable
CREATE TABLE "backtests" (
    "id" TEXT NOT NULL,
    "pipeline_id" TEXT NOT NULL,
    "version_id" TEXT NOT NULL,
    "deployment_id" TEXT,
    "range" JSONB NOT NULL,
    "alert_topic" TEXT NOT NULL,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "backtests_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "notifications" (
    "id" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "kind" TEXT NOT NULL,
    "audience" "user_role" NOT NULL DEFAULT 'approver',
    "actor" TEXT NOT NULL,
    "pipeline_id" TEXT,
    "title" TEXT NOT NULL,
    "body" TEXT NOT NULL DEFAULT '',
    "details" JSONB NOT NULL DEFAULT '{}',
    "webhook_result" TEXT,

    CONSTRAINT "notifications_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "notification_reads" (
    "notification_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "read_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "notification_reads_pkey" PRIMARY KEY ("notification_id","user_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "backtests_deployment_id_key" ON "backtests"("deployment_id");

-- CreateIndex
CREATE INDEX "backtests_pipeline_id_created_at_idx" ON "backtests"("pipeline_id", "created_at");

-- CreateIndex
CREATE INDEX "notifications_at_idx" ON "notifications"("at");

-- AddForeignKey
ALTER TABLE "backtests" ADD CONSTRAINT "backtests_pipeline_id_fkey" FOREIGN KEY ("pipeline_id") REFERENCES "pipelines"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "backtests" ADD CONSTRAINT "backtests_version_id_fkey" FOREIGN KEY ("version_id") REFERENCES "pipeline_versions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "backtests" ADD CONSTRAINT "backtests_deployment_id_fkey" FOREIGN KEY ("deployment_id") REFERENCES "deployments"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "notification_reads" ADD CONSTRAINT "notification_reads_notification_id_fkey" FOREIGN KEY ("notification_id") REFERENCES "notifications"("id") ON DELETE CASCADE ON UPDATE CASCADE;

