-- Issue 18: an activity's generation and incarnation, and the idempotency key of an order.
-- Each statement adds one column with a default, so rows written before stay valid (an empty
-- generation means "not known": only the presence of the Redis metadata is checked for such a
-- row). MySQL 8 has no ADD COLUMN IF NOT EXISTS: sql.Migrate counts "duplicate column name"
-- (1060) as applied, which keeps the file idempotent on MySQL and MariaDB alike.

-- generation: a random id minted when the activity's Redis state is made (the admin create,
-- then each restore), also kept in the Redis metadata (meta field gen). A different or missing
-- one in Redis means Redis lost or replaced the state: the activity is recovering.
ALTER TABLE activities ADD COLUMN generation VARCHAR(32) NOT NULL DEFAULT '';

-- incarnation: how many restores the activity had. A restore rebuilds Redis at epoch
-- incarnation * 1000000, above every epoch an older incarnation could have used, so a
-- reservation id (activity.epoch.shard.n) is never handed out twice.
ALTER TABLE activities ADD COLUMN incarnation INT NOT NULL DEFAULT 0;

-- idem_hash: the hash of the idempotency key the reservation was made with (16 hex digits,
-- the suffix of the binding field <uh>:i:<hash>), so a restore rebuilds the binding and a
-- replayed key still returns its reservation.
ALTER TABLE orders ADD COLUMN idem_hash VARCHAR(16) NOT NULL DEFAULT '';
