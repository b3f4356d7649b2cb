package order

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/lua"
)

// scripts are the order pipeline's own Redis scripts and the inventory verbs it calls.
type scripts struct {
	unlock *redis.Script
	ledger *inventory.Ledger
}

// loadScripts loads the pipeline's scripts; ledger is the process's one inventory.Ledger on
// rdb, shared by its parts (the Ledger option of each), and nil builds one.
func loadScripts(rdb redis.UniversalClient, ledger *inventory.Ledger) (*scripts, error) {
	unlock, err := lua.Load("order_unlock.lua")
	if err != nil {
		err = fmt.Errorf("order: %w", err)
	}
	var err2 error
	if ledger == nil {
		ledger, err2 = inventory.NewLedger(rdb)
	}
	if err := errors.Join(err, err2); err != nil {
		return nil, err
	}
	return &scripts{unlock: unlock, ledger: ledger}, nil
}
