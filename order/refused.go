package order

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/seckill/seckill/sql"
)

// RefusedReport lists an activity's reservations answered 202 whose order MySQL refused
// (insert.go): broken promises, each with its buyer, so support can reach them.
type RefusedReport struct {
	Count int64 `json:"count"`
	Units int64 `json:"units"`
	// Reservations are the first maxLostListed refusals, oldest first.
	Reservations []RefusedReservation `json:"reservations"`
}

// RefusedReservation is one refused reservation.
type RefusedReservation struct {
	ReservationID string `json:"reservationId"`
	UserID        string `json:"userId"`
	Quantity      int    `json:"quantity"`
	Reason        string `json:"reason"` // stock, limit or activity
}

// Refused reads the activity's refusals from MySQL's compensations rows.
func (r *Reconciler) Refused(ctx context.Context, id string) (RefusedReport, error) {
	q := r.db.WithContext(ctx).Model(&sql.Compensation{}).Where("activity_id = ? AND reason LIKE ?", id, refusedPrefix+"%")
	var sum struct{ N, Units int64 }
	if err := q.Session(&gorm.Session{}).Select("COUNT(*) AS n, COALESCE(SUM(quantity), 0) AS units").Scan(&sum).Error; err != nil {
		return RefusedReport{}, fmt.Errorf("order: count the refusals of %s: %w", id, err)
	}
	var rows []sql.Compensation
	if err := q.Session(&gorm.Session{}).Order("id").Limit(maxLostListed).Find(&rows).Error; err != nil {
		return RefusedReport{}, fmt.Errorf("order: read the refusals of %s: %w", id, err)
	}
	out := RefusedReport{Count: sum.N, Units: sum.Units, Reservations: make([]RefusedReservation, len(rows))}
	for i, c := range rows {
		out.Reservations[i] = RefusedReservation{ReservationID: c.ReservationID, UserID: c.UserID, Quantity: c.Quantity,
			Reason: strings.TrimPrefix(c.Reason, refusedPrefix)}
	}
	return out, nil
}
