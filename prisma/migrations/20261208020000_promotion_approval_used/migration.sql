-- An approval allows one enforcing deploy: the deploy that uses it is recorded on the request. Additive only.
-- AlterTable
ALTER TABLE "promotion_requests" ADD COLUMN     "used_at" TIMESTAMPTZ(3),
ADD COLUMN     "used_by_deployment_id" TEXT;
