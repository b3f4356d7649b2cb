-- Issue 18: a reservation id carries its issuer (inventory/keys.go ReservationID):
-- <activity>.<epoch>.<shard>.<n>.<process incarnation, 16 hex>-<call number>, at most 136
-- bytes (a 64-byte activity id and every number at its widest), so that an id is never handed
-- out twice whatever Redis forgot. The reservation_id columns grow from 96 to 160 characters.
-- Widening a VARCHAR that already has a two-byte length (96 and 160 utf8mb4 characters are
-- both over 255 bytes) changes no stored row: MariaDB and MySQL do it in place, the unique
-- keys stay. Running it again changes nothing, so the file is idempotent.

ALTER TABLE orders MODIFY reservation_id VARCHAR(160) NOT NULL;

ALTER TABLE compensations MODIFY reservation_id VARCHAR(160) NOT NULL;
