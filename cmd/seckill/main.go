// Command seckill runs the flash-sale service. With no flags it starts in embedded mode
// (in-process Redis, SQLite, queue and the YAML config file); with the SECKILL_* environment
// or flags for real Redis, MySQL, RocketMQ and Nacos it runs in production mode. --help lists
// every flag with its variable and default.
//
// Subcommands: "seckill config check FILE" validates a configuration as a live edit would;
// "seckill migrate" applies the MySQL schema files; --version prints the build.
//
// Exit status: 0 after a clean shutdown, --help or --version, 2 for a flag or variable that
// does not parse, 1 for any other failure (a refused config check, a failed migration).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/seckill/seckill/app"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(stdout, app.Build())
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if code, ok := app.Command(ctx, args, getenv, stdout, stderr); ok {
		return code
	}
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
	log := app.NewLogger(stderr, opts.LogLevel)
	// go-redis, rocketmq-client-go and nacos-sdk-go log through package-level loggers of
	// their own; route them through ours before the first client is built.
	app.InstallLibraryLoggers(log)
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
