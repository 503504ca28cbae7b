-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "deployment_mode" AS ENUM ('shadow', 'enforcing', 'test');

-- CreateEnum
CREATE TYPE "deployment_status" AS ENUM ('pending', 'running', 'stopped', 'failed');

-- CreateEnum
CREATE TYPE "checkpoint_status" AS ENUM ('in_progress', 'completed', 'failed');

-- CreateEnum
CREATE TYPE "user_role" AS ENUM ('analyst', 'approver', 'admin');

-- CreateTable
CREATE TABLE "pipelines" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "draft" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "pipelines_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "pipeline_versions" (
    "id" TEXT NOT NULL,
    "pipeline_id" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "graph" JSONB NOT NULL,
    "graph_hash" TEXT NOT NULL,
    "message" TEXT NOT NULL DEFAULT '',
    "author" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "pipeline_versions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "deployments" (
    "id" TEXT NOT NULL,
    "pipeline_id" TEXT NOT NULL,
    "version_id" TEXT NOT NULL,
    "mode" "deployment_mode" NOT NULL DEFAULT 'shadow',
    "status" "deployment_status" NOT NULL DEFAULT 'pending',
    "runner_job_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "stopped_at" TIMESTAMPTZ(3),
    "failure_reason" TEXT,

    CONSTRAINT "deployments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "checkpoints" (
    "id" BIGSERIAL NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "checkpoint_id" INTEGER NOT NULL,
    "status" "checkpoint_status" NOT NULL,
    "triggered_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER,
    "size_bytes" BIGINT,
    "incremental_size_bytes" BIGINT,
    "alignment_ms" INTEGER,
    "acks" JSONB NOT NULL DEFAULT '{}',
    "failure_reason" TEXT,
    "path" TEXT,

    CONSTRAINT "checkpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "users" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "password_hash" TEXT NOT NULL,
    "role" "user_role" NOT NULL DEFAULT 'analyst',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_events" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "subject_type" TEXT NOT NULL,
    "subject_id" TEXT NOT NULL,
    "details" JSONB NOT NULL DEFAULT '{}',
    "reason" TEXT,
    "prev_hash" TEXT,
    "hash" TEXT NOT NULL,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "pipelines_name_key" ON "pipelines"("name");

-- CreateIndex
CREATE INDEX "pipeline_versions_pipeline_id_graph_hash_idx" ON "pipeline_versions"("pipeline_id", "graph_hash");

-- CreateIndex
CREATE UNIQUE INDEX "pipeline_versions_pipeline_id_number_key" ON "pipeline_versions"("pipeline_id", "number");

-- CreateIndex
CREATE INDEX "deployments_pipeline_id_created_at_idx" ON "deployments"("pipeline_id", "created_at");

-- CreateIndex
CREATE INDEX "deployments_version_id_idx" ON "deployments"("version_id");

-- CreateIndex
CREATE INDEX "deployments_status_idx" ON "deployments"("status");

-- CreateIndex
CREATE INDEX "deployments_runner_job_id_idx" ON "deployments"("runner_job_id");

-- CreateIndex
CREATE INDEX "checkpoints_deployment_id_triggered_at_idx" ON "checkpoints"("deployment_id", "triggered_at");

-- CreateIndex
CREATE UNIQUE INDEX "checkpoints_deployment_id_checkpoint_id_key" ON "checkpoints"("deployment_id", "checkpoint_id");

-- CreateIndex
CREATE UNIQUE INDEX "users_email_key" ON "users"("email");

-- CreateIndex
CREATE UNIQUE INDEX "audit_events_hash_key" ON "audit_events"("hash");

-- CreateIndex
CREATE INDEX "audit_events_subject_type_subject_id_at_idx" ON "audit_events"("subject_type", "subject_id", "at");

-- CreateIndex
CREATE INDEX "audit_events_at_idx" ON "audit_events"("at");

-- CreateIndex
CREATE INDEX "audit_events_actor_at_idx" ON "audit_events"("actor", "at");

-- AddForeignKey
ALTER TABLE "pipeline_versions" ADD CONSTRAINT "pipeline_versions_pipeline_id_fkey" FOREIGN KEY ("pipeline_id") REFERENCES "pipelines"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deployments" ADD CONSTRAINT "deployments_pipeline_id_fkey" FOREIGN KEY ("pipeline_id") REFERENCES "pipelines"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deployments" ADD CONSTRAINT "deployments_version_id_fkey" FOREIGN KEY ("version_id") REFERENCES "pipeline_versions"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "checkpoints" ADD CONSTRAINT "checkpoints_deployment_id_fkey" FOREIGN KEY ("deployment_id") REFERENCES "deployments"("id") ON DELETE CASCADE ON UPDATE CASCADE;
