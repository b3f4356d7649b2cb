-- Issue 42: MySQL has the last word on what is sold. activities.sold is the units the
-- activity's orders hold (SUM(orders.quantity)); the order writer moves it in the transaction
-- that inserts or deletes orders, under the activity row's exclusive lock, and inserts no order
-- that would take it past stock (order/insert.go). The UPDATE sets it from the orders already
-- written (a release before this one had no counter); running it again sets the same value,
-- so the file is idempotent. Stop the writers of the earlier release before this file is
-- applied: an order they insert afterwards is not counted (the reconciliation reports the
-- difference as soldDrift with an ERROR line, and a restore sets the counter from the orders
-- again).
ALTER TABLE activities ADD COLUMN sold BIGINT NOT NULL DEFAULT 0;

UPDATE activities SET sold = (SELECT COALESCE(SUM(o.quantity), 0) FROM orders o WHERE o.activity_id = activities.id);
