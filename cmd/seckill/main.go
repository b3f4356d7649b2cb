// Command seckill runs the flash-sale service. With no flags it starts in embedded mode
// (in-process Redis, SQLite, queue and the YAML config file); with the SECKILL_* environment
// or flags for real Redis, MySQL, RocketMQ and Nacos it runs in production mode.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/seckill/seckill/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(1)
	}
}

func run() error {
	opts, err := app.ParseOptions(os.Args[1:], os.Getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.New(ctx, opts, log)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}
