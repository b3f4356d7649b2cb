// Command seckill runs the flash-sale service. With no flags it starts in embedded mode
// (in-process Redis, SQLite, queue and the YAML config file); with the SECKILL_* environment
// or flags for real Redis, MySQL, RocketMQ and Nacos it runs in production mode. --help lists
// every flag with its variable and default.
//
// Exit status: 0 after a clean shutdown or --help, 2 for a flag or variable that does not
// parse, 1 for any other failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/order"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opts, err := app.ParseOptions(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "seckill:", err)
		var ue *app.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, "seckill: see --help")
			return 2
		}
		return 1
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// go-redis logs through a package-level logger of its own; route it through ours (JSON,
	// repeats rate-limited) before the first client is built.
	redis.SetLogger(order.NewRedisLogger(log))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.New(ctx, opts, log)
	if err != nil {
		fmt.Fprintln(stderr, "seckill:", err)
		return 1
	}
	defer a.Close()
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "seckill:", err)
		return 1
	}
	return 0
}
