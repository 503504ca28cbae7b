-- Hand-written (Prisma cannot express triggers in schema.prisma).

-- The audit trail is append-only: rows of audit_events can be inserted, never changed or removed.
-- (A table owner can still bypass this with ALTER TABLE … DISABLE TRIGGER; the hash chain in
-- prev_hash/hash makes such tampering detectable.)
CREATE FUNCTION "keyflow_refuse_audit_change"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP
    USING ERRCODE = 'restrict_violation',
          HINT = 'Record a new audit event instead of changing or deleting one.';
END;
$$;

CREATE TRIGGER "audit_events_no_update_delete"
  BEFORE UPDATE OR DELETE ON "audit_events"
  FOR EACH ROW EXECUTE FUNCTION "keyflow_refuse_audit_change"();

CREATE TRIGGER "audit_events_no_truncate"
  BEFORE TRUNCATE ON "audit_events"
  FOR EACH STATEMENT EXECUTE FUNCTION "keyflow_refuse_audit_change"();

-- Pipeline versions are immutable once written (they may only disappear with their pipeline,
-- through ON DELETE CASCADE).
CREATE FUNCTION "keyflow_refuse_version_update"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'pipeline_versions are immutable: UPDATE of version % refused', OLD."id"
    USING ERRCODE = 'restrict_violation',
          HINT = 'Create a new version instead.';
END;
$$;

CREATE TRIGGER "pipeline_versions_no_update"
  BEFORE UPDATE ON "pipeline_versions"
  FOR EACH ROW EXECUTE FUNCTION "keyflow_refuse_version_update"();
