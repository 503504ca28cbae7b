-- The desired state of a deployment (running or stopped), set by deploy, stop, resume and promotion:
-- the reconciler starts again, from its newest checkpoint, every deployment that should run and
-- that the runner does not have (it restarted). Rows already ended stay stopped.
-- CreateEnum
CREATE TYPE "deployment_desired" AS ENUM ('running', 'stopped');

-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "desired" "deployment_desired" NOT NULL DEFAULT 'running';
UPDATE "deployments" SET "desired" = 'stopped' WHERE "status" NOT IN ('pending', 'running');

-- CreateIndex
CREATE INDEX "deployments_desired_idx" ON "deployments"("desired");
