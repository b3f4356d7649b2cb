-- Issue 45: a sale has an end. ended_at is when an operator ended the sale (POST
-- /admin/v1/activities/{id}/end: no reservation after it, whatever closes_at says); archived_at
-- is when its Redis keys were deleted (POST .../archive), after which MySQL alone keeps the
-- activity: its orders, its sold counter and final_report, the JSON of the sale report and the
-- reconciliation as they were at the archive. An archived activity is not expected in Redis, so
-- a Redis without its keys is no loss. Each statement adds a nullable column: rows written
-- before stay live, and running the file again counts as applied.
ALTER TABLE activities ADD COLUMN ended_at DATETIME(3) NULL;

ALTER TABLE activities ADD COLUMN archived_at DATETIME(3) NULL;

ALTER TABLE activities ADD COLUMN final_report MEDIUMTEXT NULL;
