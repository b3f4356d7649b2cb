package order

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/lua"
)

// scripts are the order pipeline's own Redis scripts and the inventory verbs it calls,
// loaded once per component.
type scripts struct {
	unlock *redis.Script
	ledger *inventory.Ledger
}

func loadScripts(rdb redis.UniversalClient) (*scripts, error) {
	unlock, err := lua.Load("order_unlock.lua")
	if err != nil {
		err = fmt.Errorf("order: %w", err)
	}
	ledger, err2 := inventory.NewLedger(rdb)
	if err := errors.Join(err, err2); err != nil {
		return nil, err
	}
	return &scripts{unlock: unlock, ledger: ledger}, nil
}
