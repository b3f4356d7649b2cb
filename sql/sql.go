// Package sql holds the MySQL schema of the service as files and applies them.
//
// The files (NNN_name.sql, applied in version order, each once: table schema_migrations
// records them) are the contract that downstream systems and tests read. Migrate applies them
// on MySQL or MariaDB (at every start, and from the command seckill migrate); on the
// embedded SQLite database of the embedded mode it creates the same tables from the models
// instead, and runs the files' data statements (UPDATE ...), written to run on both. A schema change is a new file with the next number; a file never changes once
// released.
package sql

import (
	sqldb "database/sql"
	"embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

//go:embed *.sql
var files embed.FS

// Activity is a row of table activities.
type Activity struct {
	ID           string `gorm:"primaryKey;size:64"`
	CampaignID   string `gorm:"size:64;not null;default:''"`
	Stock        int64  `gorm:"not null"`
	PerUserLimit int    `gorm:"not null"`
	OpensAt      time.Time
	ClosesAt     *time.Time
	Shards       int  `gorm:"not null"`
	RequireToken bool `gorm:"not null;default:false"`
	// Generation identifies the activity's current Redis state (002_generation.sql); ""
	// for a row written before it existed.
	Generation string `gorm:"size:32;not null;default:''"`
	// Incarnation counts the restores of the activity's Redis state.
	Incarnation int `gorm:"not null;default:0"`
	// Sold is the units the activity's orders hold (004_sold.sql): the order writer moves it
	// with the orders, under the row's lock, and never past Stock.
	Sold int64 `gorm:"not null;default:0"`
	// EndedAt is when an operator ended the sale (005_lifecycle.sql); nil while it runs.
	EndedAt *time.Time
	// ArchivedAt is when the activity's Redis keys were deleted; MySQL alone keeps it since,
	// with FinalReport, the JSON of its report and reconciliation at that time.
	ArchivedAt  *time.Time
	FinalReport *string `gorm:"type:mediumtext"`
	CreatedAt   time.Time
}

// Order is a row of table orders: one confirmed order.
type Order struct {
	ID            int64  `gorm:"primaryKey;autoIncrement"`
	ReservationID string `gorm:"size:160;not null;uniqueIndex:uk_orders_reservation"`
	ActivityID    string `gorm:"size:64;not null;uniqueIndex:uk_orders_user_seq,priority:1;index:idx_orders_activity"`
	UserID        string `gorm:"size:512;not null;uniqueIndex:uk_orders_user_seq,priority:2"`
	Quantity      int    `gorm:"not null"`
	Seq           int    `gorm:"not null;uniqueIndex:uk_orders_user_seq,priority:3"`
	Status        string `gorm:"size:16;not null;default:CONFIRMED"`
	// IdemHash is the hash of the reservation's idempotency key (inventory's binding field
	// suffix), "" when unknown.
	IdemHash  string `gorm:"size:16;not null;default:''"`
	CreatedAt time.Time
}

// Compensation is a row of table compensations: a reservation that failed for good.
type Compensation struct {
	ID            int64  `gorm:"primaryKey;autoIncrement"`
	ReservationID string `gorm:"size:160;not null;uniqueIndex:uk_compensations_reservation"`
	ActivityID    string `gorm:"size:64;not null;index:idx_compensations_activity"`
	UserID        string `gorm:"size:512;not null"`
	Quantity      int    `gorm:"not null"`
	Reason        string `gorm:"size:255;not null"`
	CreatedAt     time.Time
}

// SchemaMigration is a row of table schema_migrations: one schema file applied.
type SchemaMigration struct {
	Version   int    `gorm:"primaryKey;autoIncrement:false"`
	Name      string `gorm:"size:255;not null"`
	AppliedAt time.Time
}

// Migration is one schema file, NNN_name.sql: its version NNN, its file name and its
// statements in file order. Every statement of a file is idempotent (CREATE ... IF NOT
// EXISTS; an ADD COLUMN or ADD INDEX that already exists counts as applied), so a file cut
// short by a crash is applied again whole.
type Migration struct {
	Version    int
	Name       string
	Statements []string
}

// Migrations returns the schema files in version order. A file whose name does not start
// with a number and an underscore, or a version given twice, is an error.
func Migrations() ([]Migration, error) {
	ents, err := files.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int]string{}
	for _, e := range ents {
		n := e.Name()
		num, _, ok := strings.Cut(n, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("schema file %s: want NNN_name.sql", n)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("schema files %s and %s share version %d", prev, n, v)
		}
		seen[v] = n
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: n, Statements: splitStatements(string(b))})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// splitStatements drops the comment lines of a schema file and splits it at semicolons.
func splitStatements(text string) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	var stmts []string
	for _, s := range strings.Split(strings.Join(lines, "\n"), ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// Statements returns the schema's SQL statements in the order they apply.
func Statements() ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	var stmts []string
	for _, m := range ms {
		stmts = append(stmts, m.Statements...)
	}
	return stmts, nil
}

// Migrate applies the schema files not yet recorded in schema_migrations. It is safe to run
// concurrently from several instances and on every start.
func Migrate(db *gorm.DB) error {
	_, err := Apply(db)
	return err
}

// migrateLock names the MySQL advisory lock that serializes Apply across instances.
const migrateLock = "seckill.schema_migrations"

// Apply creates schema_migrations if needed, then applies, in version order, each schema file
// whose version it does not hold, recording each one after its statements ran; it returns
// the files it applied. On MySQL, instances take turns under an advisory lock (GET_LOCK), so
// two starts never apply one file at once. On SQLite (the embedded mode) it creates the
// tables from the models, runs the files' data statements (those that start with UPDATE)
// and records every file as applied.
func Apply(db *gorm.DB) ([]Migration, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, fmt.Errorf("sql: %w", err)
	}
	if db.Dialector.Name() != "mysql" {
		if err := db.AutoMigrate(&Activity{}, &Order{}, &Compensation{}, &SchemaMigration{}); err != nil {
			return nil, fmt.Errorf("sql: automigrate: %w", err)
		}
		return record(db, ms, func(m Migration) error {
			for _, s := range m.Statements {
				if !strings.HasPrefix(s, "UPDATE ") {
					continue // the tables come from the models
				}
				if err := db.Exec(s).Error; err != nil {
					return fmt.Errorf("sql: apply %s: %w", m.Name, err)
				}
			}
			return nil
		})
	}
	var applied []Migration
	err = db.Connection(func(conn *gorm.DB) error {
		// A session, so each call below starts a statement of its own on the one connection
		// (the advisory lock is the connection's).
		conn = conn.Session(&gorm.Session{})
		var got sqldb.NullInt64
		if err := conn.Raw("SELECT GET_LOCK(?, 60)", migrateLock).Scan(&got).Error; err != nil {
			return fmt.Errorf("sql: lock %s: %w", migrateLock, err)
		}
		if !got.Valid || got.Int64 != 1 {
			return fmt.Errorf("sql: lock %s: not granted within 60 s (another instance migrating?)", migrateLock)
		}
		defer conn.Exec("SELECT RELEASE_LOCK(?)", migrateLock)
		if err := conn.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INT          NOT NULL,
  name       VARCHAR(255) NOT NULL,
  applied_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`).Error; err != nil {
			return fmt.Errorf("sql: create schema_migrations: %w", err)
		}
		applied, err = record(conn, ms, func(m Migration) error {
			for _, s := range m.Statements {
				if err := conn.Exec(s).Error; err != nil && !alreadyApplied(err) {
					return fmt.Errorf("sql: apply %s: %w", m.Name, err)
				}
			}
			return nil
		})
		return err
	})
	return applied, err
}

// record runs apply for each migration schema_migrations does not hold, then records it.
func record(db *gorm.DB, ms []Migration, apply func(Migration) error) ([]Migration, error) {
	var rows []SchemaMigration
	if err := db.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("sql: read schema_migrations: %w", err)
	}
	have := map[int]bool{}
	for _, r := range rows {
		have[r.Version] = true
	}
	var applied []Migration
	for _, m := range ms {
		if have[m.Version] {
			continue
		}
		if err := apply(m); err != nil {
			return applied, err
		}
		row := SchemaMigration{Version: m.Version, Name: m.Name, AppliedAt: time.Now().UTC()}
		if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
			return applied, fmt.Errorf("sql: record %s: %w", m.Name, err)
		}
		applied = append(applied, m)
	}
	return applied, nil
}

// Applied returns the rows of schema_migrations in version order (none before the first
// Apply).
func Applied(db *gorm.DB) ([]SchemaMigration, error) {
	var rows []SchemaMigration
	if !db.Migrator().HasTable(&SchemaMigration{}) {
		return nil, nil
	}
	err := db.Order("version").Find(&rows).Error
	return rows, err
}

// alreadyApplied reports whether err is MySQL's answer to a step that was done before: a
// duplicate column (1060) or key name (1061), by an earlier start cut short.
func alreadyApplied(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1060 || me.Number == 1061)
}
