package order

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lua"
)

// scripts are the order pipeline's Redis scripts, loaded once per component.
type scripts struct {
	ack, confirm, unlock, fail, refund *redis.Script
}

func loadScripts() (*scripts, error) {
	var s scripts
	for _, x := range []struct {
		name string
		dst  **redis.Script
	}{
		{"order_ack.lua", &s.ack}, {"order_confirm.lua", &s.confirm}, {"order_unlock.lua", &s.unlock},
		{"order_fail.lua", &s.fail}, {"order_refund.lua", &s.refund},
	} {
		sc, err := lua.Load(x.name)
		if err != nil {
			return nil, fmt.Errorf("order: %w", err)
		}
		*x.dst = sc
	}
	return &s, nil
}

// ConfirmResult is the outcome of order_confirm.lua. The zero value is Unknown.
type ConfirmResult int

const (
	ConfirmUnknown   ConfirmResult = iota
	Confirmed                      // PENDING -> CONFIRMED now
	AlreadyConfirmed               // it was CONFIRMED already
	ConfirmConflict                // the record is FAILED; nothing changed
	ConfirmMissing                 // no record (expired or never written)
)

func confirmResult(code int64) (ConfirmResult, error) {
	if code < int64(Confirmed) || code > int64(ConfirmMissing) {
		return ConfirmUnknown, fmt.Errorf("order: order_confirm.lua returned %d", code)
	}
	return ConfirmResult(code), nil
}

// FailResult is the outcome of order_fail.lua. The zero value is Unknown.
type FailResult int

const (
	FailUnknown        FailResult = iota
	FailedNow                     // PENDING -> FAILED now, stock returned
	AlreadyFailed                 // it was FAILED already
	FailConfirmed                 // the record is CONFIRMED; nothing changed
	FailMissing                   // no record
	FailedNowMoved                // PENDING -> FAILED now; the shard was drained: units in transit
	AlreadyFailedMoved            // FAILED already, its units still in transit: finish the credit
)

func failResult(code int64) (FailResult, error) {
	if code < int64(FailedNow) || code > int64(AlreadyFailedMoved) {
		return FailUnknown, fmt.Errorf("order: order_fail.lua returned %d", code)
	}
	return FailResult(code), nil
}
