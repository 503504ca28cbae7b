-- The audit trail against its own database (issue 35, point 9).

-- 1. The anchor: a MAC per event under a key the database never sees (computed by the app).
ALTER TABLE "audit_events" ADD COLUMN "mac" TEXT;

-- 2. The app's role. The app (web and runner) connects as a login member of `keyflow_app`, which
-- may read and write the app's tables but only SELECT and INSERT on audit_events: no UPDATE,
-- DELETE or TRUNCATE, and, not being the owner (nor a member of it), no ALTER TABLE, so it cannot
-- switch the append-only triggers off. The role that runs the migrations owns the tables and stays
-- separate (KEYFLOW_MIGRATE_DATABASE_URL). Hand-written: Prisma cannot express roles or grants.
-- Guarded so that the migration applies everywhere:
-- - on the embedded PGlite (one process, one superuser) roles guard nothing: skipped;
-- - a migrator that may not create roles and finds no keyflow_app: a warning, nothing granted
--   (a DBA creates the role, see the README, and the grants are given by a later migrate);
-- - roles are cluster-wide, so a migrator of another database may create it concurrently.
DO $$
DECLARE
  target text := current_schema();
BEGIN
  IF version() ILIKE '%emscripten%' THEN
    RAISE NOTICE 'keyflow: embedded PGlite, no app role';
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'keyflow_app') THEN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolcreaterole OR rolsuper)) THEN
      RAISE WARNING 'keyflow: role keyflow_app does not exist and % may not create roles; create it (CREATE ROLE keyflow_app NOLOGIN) and migrate again', current_user;
      RETURN;
    END IF;
    BEGIN
      CREATE ROLE keyflow_app NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created meanwhile by the migrator of another database on the same server
    END;
  END IF;
  IF pg_has_role('keyflow_app', current_user, 'USAGE')
     OR EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'keyflow_app' AND rolsuper) THEN
    RAISE WARNING 'keyflow: keyflow_app can act as % (the owner of the tables) or is a superuser: it could rewrite the audit trail', current_user;
  END IF;

  EXECUTE format('GRANT USAGE ON SCHEMA %I TO keyflow_app', target);
  EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO keyflow_app', target);
  EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA %I TO keyflow_app', target);
  -- The audit trail: read and append only.
  EXECUTE format('REVOKE ALL ON %I."audit_events" FROM keyflow_app', target);
  EXECUTE format('GRANT SELECT, INSERT ON %I."audit_events" TO keyflow_app', target);
  -- The migrations' record is the migrator's.
  EXECUTE format('REVOKE ALL ON %I."_prisma_migrations" FROM keyflow_app', target);
  EXECUTE format('GRANT SELECT ON %I."_prisma_migrations" TO keyflow_app', target);
  -- Tables and sequences of later migrations (run by this same role) get the same DML grants; a
  -- later append-only table must REVOKE UPDATE, DELETE, TRUNCATE as above.
  EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO keyflow_app', target);
  EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT USAGE, SELECT ON SEQUENCES TO keyflow_app', target);
END
$$;
