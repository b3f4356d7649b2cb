// Package order moves reservations from the stock shards' journals to MySQL orders: a relay
// hands journal entries to a queue (RocketMQ, or an in-process queue in the embedded mode),
// a writer turns queued messages into orders in MySQL, which refuses any beyond the activity's
// stock or a buyer's limit (insert.go), and confirms them in Redis, a compensator returns the stock of reservations that failed for
// good, and a reconciler compares Redis, the journal and MySQL.
//
// Delivery is at least once end to end; the writer is idempotent by reservation id and by
// the (activity, user, seq) unique key, and the Redis scripts count every unit once.
package order

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill/seckill/inventory"
)

// Message is one reservation on its way to MySQL. It is the JSON body of a queue message,
// whose key is ReservationID. Its fields mirror the journal entry fields of docs/DESIGN.md.
type Message struct {
	ReservationID string `json:"rid"`
	ActivityID    string `json:"aid"`
	UserID        string `json:"uid"`
	UserHash      string `json:"uh"`
	Quantity      int    `json:"qty"`
	Seq           int    `json:"seq"`
	Shard         int    `json:"shard"`
	Epoch         int    `json:"epoch"`
	TS            int64  `json:"ts"`
	// IdemHash is the hash of the idempotency key (inventory.IdemHash), "" when none or
	// when the entry was written before it was journalled.
	IdemHash string `json:"ik,omitempty"`

	// Attempt is how many times the queue delivered this message, 1 for the first delivery
	// (0 when the queue does not count). It is not part of the body.
	Attempt int `json:"-"`
}

// Publisher hands messages to the queue. Publish returns nil only if every message was
// confirmed sent; on an error any subset may have been sent (the writer deduplicates).
type Publisher interface {
	Publish(ctx context.Context, msgs []Message) error
}

// Subscriber delivers queued messages to one handler. A handler error means "deliver these
// again later"; nil acknowledges them. Close stops delivery and waits for the handler calls
// in progress.
type Subscriber interface {
	Subscribe(handler func(ctx context.Context, msgs []Message) error) error
	Close() error
}

// maxJournalUserID is the longest user id a message may carry: 512 bytes, what inventory
// accepted before the bound became keyspace.MaxUserID (128) and what the orders' user_id
// column holds (sql/001_schema.sql, VARCHAR(512)). The order side reads what is already sold:
// an entry journalled (or a message queued) by an earlier release with a longer id took a
// unit and was answered 202, so refusing it would dead-letter a sale; the bound of new
// reservations is inventory's.
const maxJournalUserID = 512

// ErrBadMessage marks a message that can never become an order (malformed fields).
var ErrBadMessage = errors.New("order: bad message")

// Validate checks that the message names a well-formed reservation consistent with its
// fields. It returns an error wrapping ErrBadMessage otherwise.
func (m Message) Validate() error {
	keys, _, ok := inventory.ParseReservationID(m.ReservationID)
	switch {
	case !ok:
		return fmt.Errorf("%w: reservation id %q", ErrBadMessage, m.ReservationID)
	case keys.Activity != m.ActivityID || keys.Epoch != m.Epoch || keys.Shard != m.Shard:
		return fmt.Errorf("%w: %s does not match activity/epoch/shard fields", ErrBadMessage, m.ReservationID)
	case m.UserID == "" || len(m.UserID) > maxJournalUserID:
		return fmt.Errorf("%w: %s: user id", ErrBadMessage, m.ReservationID)
	case !inventory.ValidUserHash(m.UserHash):
		return fmt.Errorf("%w: %s: user hash", ErrBadMessage, m.ReservationID)
	case m.Quantity <= 0 || m.Seq <= 0:
		return fmt.Errorf("%w: %s: quantity/seq", ErrBadMessage, m.ReservationID)
	}
	return nil
}

// messageOf is the message of a decoded journal stream entry (journal.Entry: what
// inventory.ParseJournalEntry read of the packed field e, or of the fields of the release
// before, and its error; je holds what it read before a fault).
func messageOf(je inventory.JournalReservation, err error) (Message, error) {
	m := Message{ReservationID: je.ReservationID, ActivityID: je.ActivityID, UserID: je.UserID, UserHash: je.UserHash,
		Quantity: je.Quantity, Seq: je.Seq, Shard: je.Shard, Epoch: je.Epoch, TS: je.TS,
		IdemHash: inventory.IdemHash(je.IdemField, je.UserHash)}
	if err != nil {
		return m, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	return m, m.Validate()
}
