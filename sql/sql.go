// Package sql holds the MySQL schema of the service as files and applies them.
//
// The files (*.sql, applied in name order) are the contract that downstream systems and
// tests read. Migrate applies them on MySQL or MariaDB; on the embedded SQLite database of
// the embedded mode it creates the same tables from the models instead.
package sql

import (
	"embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
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
	CreatedAt   time.Time
}

// Order is a row of table orders: one confirmed order.
type Order struct {
	ID            int64  `gorm:"primaryKey;autoIncrement"`
	ReservationID string `gorm:"size:96;not null;uniqueIndex:uk_orders_reservation"`
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
	ReservationID string `gorm:"size:96;not null;uniqueIndex:uk_compensations_reservation"`
	ActivityID    string `gorm:"size:64;not null;index:idx_compensations_activity"`
	UserID        string `gorm:"size:512;not null"`
	Quantity      int    `gorm:"not null"`
	Reason        string `gorm:"size:255;not null"`
	CreatedAt     time.Time
}

// Statements returns the schema's SQL statements in the order they apply.
func Statements() ([]string, error) {
	ents, err := files.ReadDir(".")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var stmts []string
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				lines = append(lines, l)
			}
		}
		for _, s := range strings.Split(strings.Join(lines, "\n"), ";") {
			if s = strings.TrimSpace(s); s != "" {
				stmts = append(stmts, s)
			}
		}
	}
	return stmts, nil
}

// Migrate creates the tables if they do not exist. It is safe to run concurrently from
// several instances and on every start.
func Migrate(db *gorm.DB) error {
	if db.Dialector.Name() != "mysql" {
		if err := db.AutoMigrate(&Activity{}, &Order{}, &Compensation{}); err != nil {
			return fmt.Errorf("sql: automigrate: %w", err)
		}
		return nil
	}
	stmts, err := Statements()
	if err != nil {
		return fmt.Errorf("sql: %w", err)
	}
	for _, s := range stmts {
		if err := db.Exec(s).Error; err != nil && !columnExists(err) {
			return fmt.Errorf("sql: apply schema: %w", err)
		}
	}
	return nil
}

// columnExists reports whether err is MySQL's "duplicate column name" (1060): an ADD COLUMN
// applied before, by an earlier start or by another instance at the same time.
func columnExists(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1060
}
