package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/sql"
)

// CheckConfigFile runs the configuration file at path through the same steps as a live
// edit (size and emptiness bounds, strict decode, validation, the snapshot build with the
// JWT key material given at start-up) and returns a one-line summary of what it holds. The
// one check of a live edit it cannot make is against a running instance: a change of
// auth.mode or auth.trustedGateway is refused live. A jwt configuration checked without key
// material is built with a stand-in key, and the summary says so.
func CheckConfigFile(path string, getenv func(string) string) (string, error) {
	data, err := config.ReadRegularFile(path, config.MaxDocumentBytes+1)
	if err != nil {
		return "", err
	}
	cfg, err := config.Decode(data)
	if err != nil {
		return "", err
	}
	keys, err := loadAuthKeys(Options{JWTHS256Secret: getenv("SECKILL_JWT_HS256_SECRET"), JWTRS256PublicKeyFile: getenv("SECKILL_JWT_RS256_PUBLIC_KEY_FILE")})
	if err != nil {
		return "", err
	}
	note := ""
	if cfg.Auth.Mode == config.AuthJWT && keys.hsSecret == nil && keys.rsKey == nil {
		keys.hsSecret = make([]byte, minHS256SecretBytes)
		note = "; jwt key not checked (give SECKILL_JWT_HS256_SECRET or SECKILL_JWT_RS256_PUBLIC_KEY_FILE as at start-up)"
	}
	if _, err := keys.buildSnapshot(cfg, config.Meta{Source: "file", Version: cfg.Version()}); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: valid (version %s, auth %s, %d activities, %d campaigns)%s",
		path, cfg.Version(), cfg.Auth.Mode, len(cfg.Activities), len(cfg.Campaigns), note), nil
}

// Command runs a subcommand of seckill (the words before any flag): "config check FILE" and
// "migrate". It reports whether args named one, and its exit status: 0 done, 1 the check or
// the migration failed, 2 a usage error.
func Command(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "config":
		force := len(args) == 4 && args[1] == "publish" && args[2] == "--force"
		if force {
			args = append(args[:2:2], args[3])
		}
		if len(args) != 3 || args[1] != "check" && args[1] != "publish" {
			fmt.Fprintln(stderr, "seckill: usage: seckill config check FILE | seckill config publish [--force] FILE")
			return 2, true
		}
		sum, err := CheckConfigFile(args[2], getenv)
		if err != nil {
			fmt.Fprintf(stderr, "seckill: %s: %v\n", args[2], err)
			return 1, true
		}
		fmt.Fprintln(stdout, sum)
		if args[1] == "publish" {
			return publishCommand(ctx, args[2], force, getenv, stdout, stderr), true
		}
		return 0, true
	case "migrate":
		return migrateCommand(ctx, args[1:], getenv, stdout, stderr), true
	}
	return 0, false
}

// ExitRefused is the exit status of a config publish that found another live configuration
// and wrote nothing: a decision, not a failure to retry (the Kubernetes Job fails at once on it).
const ExitRefused = 3

// publishCommand stores the configuration file at path (checked already) in Nacos, under the
// data id, group and namespace the service reads (SECKILL_NACOS_* variables and defaults). A
// data id that exists with another content is the live configuration of a running fleet:
// it is replaced only with force, else the differences are shown and nothing is written (exit
// 1); the same content is left as it is.
func publishCommand(ctx context.Context, path string, force bool, getenv func(string) string, stdout, stderr io.Writer) int {
	// The Nacos variables only, parsed as the service parses them.
	o, err := ParseOptions(nil, func(k string) string {
		switch {
		case strings.HasPrefix(k, "SECKILL_NACOS_"):
			return getenv(k)
		case k == "SECKILL_STAND_INS":
			return "redis,mysql,rocketmq"
		}
		return ""
	}, io.Discard)
	if err != nil {
		fmt.Fprintf(stderr, "seckill: config publish: %v\n", err)
		return 2
	}
	if o.NacosAddr == "" {
		fmt.Fprintln(stderr, "seckill: config publish: set SECKILL_NACOS_ADDR (and SECKILL_NACOS_USERNAME, SECKILL_NACOS_PASSWORD with auth)")
		return 2
	}
	data, err := config.ReadRegularFile(path, config.MaxDocumentBytes)
	if err != nil {
		fmt.Fprintf(stderr, "seckill: config publish: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	live, found, err := config.ReadNacos(ctx, o.NacosAddr, o.NacosUsername, o.NacosPassword, o.NacosNamespace, o.NacosDataID, o.NacosGroup)
	if err != nil {
		fmt.Fprintf(stderr, "seckill: config publish: %v\n", err)
		return 1
	}
	if found && strings.TrimSpace(live) == strings.TrimSpace(string(data)) {
		fmt.Fprintf(stdout, "data id %s, group %s holds this configuration already: nothing published\n", o.NacosDataID, o.NacosGroup)
		return 0
	}
	if found && !force {
		fmt.Fprintf(stderr, "seckill: config publish: data id %s, group %s holds another configuration, which the running instances apply; "+
			"nothing published. What would change (- live, + %s):\n%s"+
			"Publish it anyway with: seckill config publish --force %s\n", o.NacosDataID, o.NacosGroup, path, lineDiff(live, string(data)), path)
		return ExitRefused
	}
	if err := config.PublishNacos(ctx, o.NacosAddr, o.NacosUsername, o.NacosPassword, o.NacosNamespace, o.NacosDataID, o.NacosGroup, data); err != nil {
		fmt.Fprintf(stderr, "seckill: config publish: %v\n", err)
		return 1
	}
	ns := o.NacosNamespace
	if ns == "" {
		ns = "public"
	}
	fmt.Fprintf(stdout, "published %s as data id %s, group %s, namespace %s on %s\n", path, o.NacosDataID, o.NacosGroup, ns, o.NacosAddr)
	return 0
}

// lineDiff lists the lines of a that b lacks (-) and of b that a lacks (+), in order, from a
// longest common subsequence of lines; for documents too long to compare that way, their
// sizes.
func lineDiff(a, b string) string {
	x, y := strings.Split(strings.TrimSpace(a), "\n"), strings.Split(strings.TrimSpace(b), "\n")
	if len(x)*len(y) > 4_000_000 {
		return fmt.Sprintf("  (%d lines live, %d in the file)\n", len(x), len(y))
	}
	// lcs[i][j] is the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("  + " + y[j] + "\n")
			j++
		default:
			out.WriteString("  - " + x[i] + "\n")
			i++
		}
	}
	return out.String()
}

// migrateCommand applies the schema files MySQL lacks and lists schema_migrations.
func migrateCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dsn := fs.String("mysql-dsn", getenv("SECKILL_MYSQL_DSN"), "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "Usage: seckill migrate [--mysql-dsn=DSN]\n\nApplies the schema files (sql/NNN_name.sql, embedded) that table schema_migrations\ndoes not record, then lists it. The DSN defaults to SECKILL_MYSQL_DSN. The service\napplies them at start too; this runs them before a rollout.")
			return 0
		}
		fmt.Fprintln(stderr, "seckill: usage: seckill migrate [--mysql-dsn=DSN]")
		return 2
	}
	if *dsn == "" {
		fmt.Fprintln(stderr, "seckill: migrate: set SECKILL_MYSQL_DSN or --mysql-dsn")
		return 2
	}
	if _, err := mysqldrv.ParseDSN(*dsn); err != nil {
		fmt.Fprintf(stderr, "seckill: migrate: want a MySQL DSN like user:pass@tcp(host:3306)/db (%v)\n", err)
		return 2
	}
	db, err := gorm.Open(mysql.Open(withDSNDefaults(*dsn)), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		fmt.Fprintf(stderr, "seckill: migrate: %v\n", err)
		return 1
	}
	if s, err := db.DB(); err == nil {
		defer s.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	db = db.WithContext(ctx)
	applied, err := sql.Apply(db)
	for _, m := range applied {
		fmt.Fprintf(stdout, "applied %s\n", m.Name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "seckill: migrate: %v\n", err)
		return 1
	}
	rows, err := sql.Applied(db)
	if err != nil {
		fmt.Fprintf(stderr, "seckill: migrate: %v\n", err)
		return 1
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	fmt.Fprintf(stdout, "schema at version %d (%s)\n", rows[len(rows)-1].Version, strings.Join(names, ", "))
	return 0
}
