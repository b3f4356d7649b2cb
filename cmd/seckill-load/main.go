// Command seckill-load plays a flash crowd against seckill instances and checks the invariants
// it can check on its own. See package scenario for the flags' meaning, package report for
// the report and package load for how a run goes.
//
//	seckill-load --target http://127.0.0.1:8080 --activity flash-1 --users 10000 \
//	    --connections 64 --duration 60s --stock 1000 --per-user-limit 1 --json report.json
//
// Exit status: 0 when every check passed, 1 when a check failed, 2 when the run could not be made.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/seckill/seckill/cmd/seckill-load/load"
	"github.com/seckill/seckill/cmd/seckill-load/scenario"
)

func main() {
	os.Exit(run())
}

func run() int {
	cfg, err := scenario.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "seckill-load:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := load.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seckill-load:", err)
		return 2
	}
	rep.WriteText(os.Stdout)
	if cfg.JSONPath != "" {
		if err := rep.WriteJSON(cfg.JSONPath); err != nil {
			fmt.Fprintln(os.Stderr, "seckill-load:", err)
			return 2
		}
	}
	if rep.Failed() {
		return 1
	}
	return 0
}
