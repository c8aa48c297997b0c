//! The catalog's SQL schema and its migrations (`docs/lineage.md` §15 lists every table, column
//! and trigger).
//!
//! **Migration rule:** `PRAGMA user_version` is the number of migrations applied. Migration `n`
//! (`MIGRATIONS[n - 1]`) takes the schema from version `n - 1` to `n`; each runs in its own
//! `BEGIN IMMEDIATE` transaction together with the `user_version` bump, so a catalog is always at
//! exactly one version. Migrations are only ever appended: a released one is never edited. A
//! catalog whose version is newer than [`LATEST`] is refused (`CATALOG_VERSION`) rather than
//! written by code that does not know its rules.

/// The schema version this build writes.
pub const LATEST: i64 = 1;

/// Migration `n` is `MIGRATIONS[n - 1]`.
pub const MIGRATIONS: [&str; 1] = [V1];

/// Version 1: objects and their references, pins, snapshots with their sources, splits,
/// transforms and plan hashes, and the immutability triggers.
const V1: &str = r"
-- Every stored lineage object: its bytes are in the object store under
-- (tenant_id, object_type, object_id); object_id = SHA-256 of those bytes (lowercase hex).
CREATE TABLE objects (
    tenant_id             TEXT    NOT NULL CHECK (length(tenant_id) > 0),
    object_type           TEXT    NOT NULL CHECK (object_type IN
                              ('dataset', 'transform', 'split', 'artifact', 'policy', 'checkpoint')),
    object_id             TEXT    NOT NULL CHECK (length(object_id) = 64
                                                  AND object_id NOT GLOB '*[^0-9a-f]*'),
    size_bytes            INTEGER NOT NULL CHECK (size_bytes >= 0),
    retention_class       TEXT    NOT NULL DEFAULT 'experimental' CHECK (retention_class IN
                              ('golden', 'certified_release', 'experimental', 'ephemeral')),
    gc_eligible_after_utc INTEGER CHECK (gc_eligible_after_utc >= 0),
    created_utc           INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, object_type, object_id)
) WITHOUT ROWID;

-- Lineage edges, always inside one tenant (cross-tenant references cannot be written).
-- The target must exist; the check is deferred to COMMIT so a GC can delete a chain of
-- collected objects in any order.
CREATE TABLE object_refs (
    tenant_id TEXT NOT NULL,
    from_type TEXT NOT NULL,
    from_id   TEXT NOT NULL,
    to_type   TEXT NOT NULL,
    to_id     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, from_type, from_id, to_type, to_id),
    FOREIGN KEY (tenant_id, from_type, from_id) REFERENCES objects ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, to_type, to_id) REFERENCES objects DEFERRABLE INITIALLY DEFERRED
) WITHOUT ROWID;
CREATE INDEX object_refs_by_target ON object_refs (tenant_id, to_type, to_id);

-- An object's retention metadata `pin_root_refs`: roots (certificates, model releases) whose
-- closure the GC keeps. A root need not be stored yet.
CREATE TABLE object_pin_refs (
    tenant_id   TEXT NOT NULL,
    object_type TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    root_type   TEXT NOT NULL CHECK (root_type IN
                    ('dataset', 'transform', 'split', 'artifact', 'policy', 'checkpoint')),
    root_id     TEXT NOT NULL CHECK (length(root_id) = 64 AND root_id NOT GLOB '*[^0-9a-f]*'),
    PRIMARY KEY (tenant_id, object_type, object_id, root_type, root_id),
    FOREIGN KEY (tenant_id, object_type, object_id) REFERENCES objects ON DELETE CASCADE
) WITHOUT ROWID;

-- Explicit GC roots (pinned certificate / release roots), by label.
CREATE TABLE pins (
    tenant_id   TEXT    NOT NULL,
    object_type TEXT    NOT NULL,
    object_id   TEXT    NOT NULL,
    label       TEXT    NOT NULL CHECK (length(label) > 0),
    created_utc INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, object_type, object_id, label),
    FOREIGN KEY (tenant_id, object_type, object_id) REFERENCES objects
) WITHOUT ROWID;

-- One row per snapshot. Its root object is (tenant_id, 'dataset', snapshot_id): the dataset
-- object whose object_id is the dataset_snapshot_id (docs/lineage.md §7.1).
CREATE TABLE snapshots (
    snapshot_id           TEXT    NOT NULL PRIMARY KEY CHECK (length(snapshot_id) = 64
                                                              AND snapshot_id NOT GLOB '*[^0-9a-f]*'),
    tenant_id             TEXT    NOT NULL,
    root_type             TEXT    NOT NULL DEFAULT 'dataset' CHECK (root_type = 'dataset'),
    dataset_name          TEXT    NOT NULL CHECK (length(dataset_name) > 0),
    version               TEXT    NOT NULL CHECK (length(version) > 0),
    created_utc           INTEGER NOT NULL,
    state                 TEXT    NOT NULL CHECK (state IN ('draft', 'published')),
    published_utc         INTEGER,
    dataset_root_hash     TEXT    NOT NULL,
    split_hashes          TEXT    NOT NULL,
    transform_chain_hash  TEXT    NOT NULL,
    lineage_root_hash     TEXT    NOT NULL,
    source_count          INTEGER NOT NULL CHECK (source_count > 0),
    transform_count       INTEGER NOT NULL CHECK (transform_count >= 0),
    snapshot_size_bytes   INTEGER NOT NULL CHECK (snapshot_size_bytes >= 0),
    retention_class       TEXT    NOT NULL CHECK (retention_class IN
                              ('golden', 'certified_release', 'experimental', 'ephemeral')),
    gc_eligible_after_utc INTEGER CHECK (gc_eligible_after_utc >= 0),
    CHECK ((state = 'published') = (published_utc IS NOT NULL)),
    UNIQUE (tenant_id, dataset_name, version),
    FOREIGN KEY (tenant_id, root_type, snapshot_id) REFERENCES objects DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX snapshots_by_dataset ON snapshots (dataset_name, created_utc);
-- The root-object foreign key's own index: deleting an object looks up the snapshot it roots.
CREATE UNIQUE INDEX snapshots_by_root ON snapshots (tenant_id, root_type, snapshot_id);

-- The files of a snapshot (sample order is path order).
CREATE TABLE snapshot_sources (
    snapshot_id  TEXT    NOT NULL REFERENCES snapshots,
    path         TEXT    NOT NULL,
    size_bytes   INTEGER NOT NULL CHECK (size_bytes >= 0),
    content_hash TEXT    NOT NULL CHECK (length(content_hash) = 64
                                         AND content_hash NOT GLOB '*[^0-9a-f]*'),
    PRIMARY KEY (snapshot_id, path)
) WITHOUT ROWID;

-- Its split entries; split_seed is the decimal text of a u64 (SQLite integers are i64).
CREATE TABLE snapshot_splits (
    snapshot_id    TEXT NOT NULL REFERENCES snapshots,
    split_name     TEXT NOT NULL,
    split_fraction REAL NOT NULL CHECK (split_fraction >= 0 AND split_fraction <= 1),
    split_seed     TEXT CHECK (split_seed NOT GLOB '*[^0-9]*'),
    object_id      TEXT NOT NULL,
    PRIMARY KEY (snapshot_id, split_name)
) WITHOUT ROWID;

-- Its transform chain in seq order; seq as decimal text (a u64), the body in the object store.
CREATE TABLE snapshot_transforms (
    snapshot_id TEXT    NOT NULL REFERENCES snapshots,
    position    INTEGER NOT NULL CHECK (position >= 0),
    seq         TEXT    NOT NULL CHECK (length(seq) > 0 AND seq NOT GLOB '*[^0-9]*'),
    object_id   TEXT    NOT NULL,
    PRIMARY KEY (snapshot_id, position)
) WITHOUT ROWID;

-- data_access_plan_hash values recorded with the snapshot.
CREATE TABLE snapshot_plans (
    snapshot_id           TEXT NOT NULL REFERENCES snapshots,
    data_access_plan_hash TEXT NOT NULL CHECK (length(data_access_plan_hash) = 64
                                               AND data_access_plan_hash NOT GLOB '*[^0-9a-f]*'),
    PRIMARY KEY (snapshot_id, data_access_plan_hash)
) WITHOUT ROWID;

-- The GC's clock: one row, only inside a GC transaction. The triggers read it to let the GC
-- (and nothing else) delete a published snapshot whose retention has expired.
CREATE TABLE gc_clock (now_utc INTEGER NOT NULL);

-- Published snapshots that nothing may touch: all of them, except, while a GC holds gc_clock,
-- those whose retention lets them go at its time (RetentionMeta::collectible_at).
CREATE VIEW locked_snapshots AS
SELECT snapshot_id FROM snapshots
WHERE state = 'published' AND NOT (
    retention_class IN ('experimental', 'ephemeral')
    AND EXISTS (SELECT 1 FROM gc_clock)
    AND CASE WHEN gc_eligible_after_utc IS NULL THEN retention_class = 'ephemeral'
             ELSE gc_eligible_after_utc <= (SELECT max(now_utc) FROM gc_clock) END
);

-- 004 §I.C: immutable after publish. A snapshot is inserted as a draft, its rows added, then
-- published by one UPDATE; after that no row of it changes.
CREATE TRIGGER snapshots_insert_as_draft BEFORE INSERT ON snapshots
WHEN NEW.state <> 'draft'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: a snapshot is inserted as a draft and then published'); END;

CREATE TRIGGER snapshots_immutable BEFORE UPDATE ON snapshots
WHEN OLD.state = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: a published snapshot is immutable'); END;

CREATE TRIGGER snapshots_no_delete BEFORE DELETE ON snapshots
WHEN EXISTS (SELECT 1 FROM locked_snapshots WHERE snapshot_id = OLD.snapshot_id)
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: a published snapshot is deleted only by the GC once expired'); END;

CREATE TRIGGER sources_insert BEFORE INSERT ON snapshot_sources
WHEN (SELECT state FROM snapshots WHERE snapshot_id = NEW.snapshot_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: sources of a published snapshot are immutable'); END;
CREATE TRIGGER sources_update BEFORE UPDATE ON snapshot_sources
WHEN (SELECT state FROM snapshots WHERE snapshot_id = OLD.snapshot_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: sources of a published snapshot are immutable'); END;
CREATE TRIGGER sources_delete BEFORE DELETE ON snapshot_sources
WHEN EXISTS (SELECT 1 FROM locked_snapshots WHERE snapshot_id = OLD.snapshot_id)
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: sources of a published snapshot are immutable'); END;

CREATE TRIGGER splits_insert BEFORE INSERT ON snapshot_splits
WHEN (SELECT state FROM snapshots WHERE snapshot_id = NEW.snapshot_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: splits of a published snapshot are immutable'); END;
CREATE TRIGGER splits_update BEFORE UPDATE ON snapshot_splits
WHEN (SELECT state FROM snapshots WHERE snapshot_id = OLD.snapshot_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: splits of a published snapshot are immutable'); END;
CREATE TRIGGER splits_delete BEFORE DELETE ON snapshot_splits
WHEN EXISTS (SELECT 1 FROM locked_snapshots WHERE snapshot_id = OLD.snapshot_id)
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: splits of a published snapshot are immutable'); END;

CREATE TRIGGER transforms_insert BEFORE INSERT ON snapshot_transforms
WHEN (SELECT state FROM snapshots WHERE snapshot_id = NEW.snapshot_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: transforms of a published snapshot are immutable'); END;
CREATE TRIGGER transforms_update BEFORE UPDATE ON snapshot_transforms
WHEN (SELECT state FROM snapshots WHERE snapshot_id = OLD.snapshot_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: transforms of a published snapshot are immutable'); END;
CREATE TRIGGER transforms_delete BEFORE DELETE ON snapshot_transforms
WHEN EXISTS (SELECT 1 FROM locked_snapshots WHERE snapshot_id = OLD.snapshot_id)
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: transforms of a published snapshot are immutable'); END;

CREATE TRIGGER plans_insert BEFORE INSERT ON snapshot_plans
WHEN (SELECT state FROM snapshots WHERE snapshot_id = NEW.snapshot_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: plan hashes of a published snapshot are immutable'); END;
CREATE TRIGGER plans_update BEFORE UPDATE ON snapshot_plans
WHEN (SELECT state FROM snapshots WHERE snapshot_id = OLD.snapshot_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: plan hashes of a published snapshot are immutable'); END;
CREATE TRIGGER plans_delete BEFORE DELETE ON snapshot_plans
WHEN EXISTS (SELECT 1 FROM locked_snapshots WHERE snapshot_id = OLD.snapshot_id)
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: plan hashes of a published snapshot are immutable'); END;

-- Objects are content-addressed: no row ever changes. The edges of a published snapshot's root
-- object are part of the snapshot.
CREATE TRIGGER objects_immutable BEFORE UPDATE ON objects
BEGIN SELECT RAISE(ABORT, 'OBJECT_IMMUTABLE: a stored object row never changes'); END;
CREATE TRIGGER object_refs_immutable BEFORE UPDATE ON object_refs
BEGIN SELECT RAISE(ABORT, 'OBJECT_IMMUTABLE: a lineage edge never changes'); END;
CREATE TRIGGER object_refs_of_published_root BEFORE INSERT ON object_refs
WHEN NEW.from_type = 'dataset'
 AND (SELECT state FROM snapshots WHERE snapshot_id = NEW.from_id) = 'published'
BEGIN SELECT RAISE(ABORT, 'SNAPSHOT_PUBLISHED: the references of a published snapshot are immutable'); END;
";
