-- seckill schema (MySQL 8 / MariaDB 10.11). Applied by sql.Migrate; every statement is idempotent.

CREATE TABLE IF NOT EXISTS activities (
  id             VARCHAR(64)  NOT NULL,
  campaign_id    VARCHAR(64)  NOT NULL DEFAULT '',
  stock          BIGINT       NOT NULL,
  per_user_limit INT          NOT NULL,
  opens_at       DATETIME(3)  NOT NULL,
  closes_at      DATETIME(3)  NULL,
  shards         INT          NOT NULL,
  require_token  TINYINT(1)   NOT NULL DEFAULT 0,
  created_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per confirmed order. user_id holds any accepted user id (128 bytes of UTF-8).
-- uk_orders_user_seq enforces the per-user limit as the last safety net: a user's n-th unit
-- has seq n, so a second order for the same unit cannot exist.
CREATE TABLE IF NOT EXISTS orders (
  id             BIGINT       NOT NULL AUTO_INCREMENT,
  reservation_id VARCHAR(96)  NOT NULL,
  activity_id    VARCHAR(64)  NOT NULL,
  user_id        VARCHAR(512) NOT NULL,
  quantity       INT          NOT NULL,
  seq            INT          NOT NULL,
  status         VARCHAR(16)  NOT NULL DEFAULT 'CONFIRMED',
  created_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  UNIQUE KEY uk_orders_reservation (reservation_id),
  UNIQUE KEY uk_orders_user_seq (activity_id, user_id(255), seq),
  KEY idx_orders_activity (activity_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Reservations that failed for good; their units went back to Redis stock.
CREATE TABLE IF NOT EXISTS compensations (
  id             BIGINT       NOT NULL AUTO_INCREMENT,
  reservation_id VARCHAR(96)  NOT NULL,
  activity_id    VARCHAR(64)  NOT NULL,
  user_id        VARCHAR(512) NOT NULL,
  quantity       INT          NOT NULL,
  reason         VARCHAR(255) NOT NULL,
  created_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  UNIQUE KEY uk_compensations_reservation (reservation_id),
  KEY idx_compensations_activity (activity_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
