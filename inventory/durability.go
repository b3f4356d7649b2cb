package inventory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lua"
)

// ErrNotDurable: a write that changes stock or a user's state ran, but fewer replicas than
// Durability.Replicas acknowledged it within Durability.Timeout. The write may be lost in a
// failover, so its outcome is not known: the caller answers as for a timeout (503
// OUTCOME_UNKNOWN with the idempotency key), never with a 202.
var ErrNotDurable = errors.New("inventory: write not acknowledged by enough replicas in time")

// Durability is what a write that changes stock or a user's state must reach before the
// service answers for it: the mode of docs/DESIGN.md "Durability". The zero value is the
// mode none (nothing is checked or waited for: embedded mode, or an explicit opt-out).
// Fixed at start; safe for concurrent use.
type Durability struct {
	// AOF: every Redis master the service writes to runs appendonly yes (CheckDurability
	// reads it at start and the caller keeps checking).
	AOF bool
	// Replicas > 0: every script that changes stock or a user's state is followed, on the
	// same connection and in the same round trip, by WAIT Replicas Timeout; fewer
	// acknowledgements is ErrNotDurable.
	Replicas int
	// Timeout is WAIT's timeout (default DefaultWaitTimeout when Replicas > 0). It must stay
	// under the Redis client's read timeout.
	Timeout time.Duration
}

// DefaultWaitTimeout is WAIT's timeout when Durability.Timeout is zero.
const DefaultWaitTimeout = 250 * time.Millisecond

// ParseDurability reads a durability mode: "none", "aof", "replicas:N" (N >= 1), or
// "aof+replicas:N".
func ParseDurability(s string) (Durability, error) {
	var d Durability
	if s == "none" {
		return d, nil
	}
	if s == "" {
		return d, errors.New(`empty durability mode (want none, aof, replicas:N or aof+replicas:N)`)
	}
	for _, part := range strings.Split(s, "+") {
		switch {
		case part == "aof" && !d.AOF:
			d.AOF = true
		case strings.HasPrefix(part, "replicas:") && d.Replicas == 0:
			n, err := strconv.Atoi(strings.TrimPrefix(part, "replicas:"))
			if err != nil || n < 1 || n > 16 {
				return Durability{}, fmt.Errorf("durability %q: replicas:N wants N in 1..16", s)
			}
			d.Replicas = n
		default:
			return Durability{}, fmt.Errorf("durability %q: want none, aof, replicas:N or aof+replicas:N", s)
		}
	}
	return d, nil
}

// String is the mode as ParseDurability reads it.
func (d Durability) String() string {
	switch {
	case d.AOF && d.Replicas > 0:
		return "aof+replicas:" + strconv.Itoa(d.Replicas)
	case d.AOF:
		return "aof"
	case d.Replicas > 0:
		return "replicas:" + strconv.Itoa(d.Replicas)
	}
	return "none"
}

func (d Durability) waitTimeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultWaitTimeout
}

// Acked sends what queue adds to a pipeline and, when d.Replicas > 0, WAIT d.Replicas
// d.Timeout right after it on the same connection, in the same round trip: WAIT then
// counts the replicas that have every write of that connection so far, the queued ones
// included. On a Redis Cluster the pipeline goes to the master of key (the slot of every
// queued command). It returns the first error of the queued commands (redis.Nil is none),
// else ErrNotDurable when fewer replicas acknowledged in time, else nil. With d.Replicas 0
// the commands go through rdb's own pipeline and nothing is waited for.
//
// This is the one place where the service waits for replicas and reads WAIT's answer.
func (d Durability) Acked(ctx context.Context, rdb redis.UniversalClient, key string, queue func(p redis.Pipeliner)) error {
	if d.Replicas <= 0 {
		p := rdb.Pipeline()
		queue(p)
		cmds, err := p.Exec(ctx)
		return firstErr(cmds, err)
	}
	var p redis.Pipeliner
	cc, cluster := rdb.(*redis.ClusterClient)
	if cluster {
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		p = node.Pipeline()
	} else {
		p = rdb.Pipeline()
	}
	queue(p)
	n := p.Len()
	wait := redis.NewIntCmd(ctx, "wait", d.Replicas, d.waitTimeout().Milliseconds())
	_ = p.Process(ctx, wait)
	cmds, _ := p.Exec(ctx)
	if len(cmds) > n {
		cmds = cmds[:n]
	}
	// The queued commands' own errors first (a network failure sets every command's); a
	// WAIT that failed after them succeeded (refused by an ACL, renamed, its reply lost) is a
	// write not known to be durable, never a success.
	if err := firstErr(cmds, nil); err != nil {
		if cluster && (isRedirect(err) || !isRedisError(err)) {
			// The slot moved or the master is gone (a failover): read the layout again so
			// the next call goes to the new master.
			cc.ReloadState(ctx)
		}
		return err
	}
	got, err := wait.Result()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %v", ErrNotDurable, err)
	}
	if got < int64(d.Replicas) {
		return fmt.Errorf("%w: %d of %d replicas within %s", ErrNotDurable, got, d.Replicas, d.waitTimeout())
	}
	return nil
}

// process runs cmd as Acked does (a plain Process when nothing is waited for); the error is
// also cmd's.
func (d Durability) process(ctx context.Context, rdb redis.UniversalClient, cmd redis.Cmder) error {
	if d.Replicas <= 0 {
		_ = rdb.Process(ctx, cmd)
		return cmd.Err()
	}
	key := ""
	if args := cmd.Args(); len(args) > 3 {
		key = fmt.Sprint(args[3]) // EVAL/EVALSHA script numkeys key...
	}
	err := d.Acked(ctx, rdb, key, func(p redis.Pipeliner) { _ = p.Process(ctx, cmd) })
	if err != nil && cmd.Err() == nil {
		// The command ran but Acked failed after it: not known to be durable.
		if !errors.Is(err, ErrNotDurable) {
			err = fmt.Errorf("%w: %v", ErrNotDurable, err)
		}
		cmd.SetErr(err)
	}
	return cmd.Err()
}

// eval runs script s with keys and args as evalArgs does.
func (d Durability) eval(ctx context.Context, rdb redis.UniversalClient, s *lua.Script, keys []string, args ...any) *redis.Cmd {
	return d.evalArgs(ctx, rdb, s, s.Args(keys, args...))
}

// evalArgs sends cmdArgs, an EVALSHA command of s (lua.Script.Args), as d.process sends a
// command, and once more as EVAL on NOSCRIPT (lua.Script.Process).
func (d Durability) evalArgs(ctx context.Context, rdb redis.UniversalClient, s *lua.Script, cmdArgs []any) *redis.Cmd {
	return s.Process(ctx, func(ctx context.Context, cmd redis.Cmder) error { return d.process(ctx, rdb, cmd) }, cmdArgs)
}

func firstErr(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
			return e
		}
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	return nil
}

func isRedirect(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "CLUSTERDOWN")
}

func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// MasterDurability is what one Redis master runs, as CheckDurability read it.
type MasterDurability struct {
	Addr string
	// AOF is appendonly; Fsync is appendfsync ("always", "everysec", "no"; "" when CONFIG
	// is not allowed).
	AOF   bool
	Fsync string
	// Replicas is the count of replicas online.
	Replicas int
	// Promotable is the count of those a Sentinel failover may promote (replica-priority not
	// 0; one whose priority could not be read counts), read only in mode replicas:N when
	// there are more replicas online than N, and not on a Cluster (which elects by offset).
	Promotable int
	replicas   []string // the online replicas' addresses (INFO replication)
}

// CheckDurability reads, from every master rdb writes to (each master of a Cluster, the
// current master behind Sentinel), what d needs: appendonly when d.AOF, the replicas online
// when d.Replicas > 0. It returns what it read, and an error naming each master that does
// not provide d and what to set. Mode none reads nothing.
func CheckDurability(ctx context.Context, rdb redis.UniversalClient, d Durability) ([]MasterDurability, error) {
	if !d.AOF && d.Replicas == 0 {
		return nil, nil
	}
	var (
		mu   sync.Mutex
		out  []MasterDurability
		errs []error
	)
	_, cluster := rdb.(*redis.ClusterClient)
	read := func(ctx context.Context, c *redis.Client) error {
		m, err := readMaster(ctx, c)
		if err != nil {
			return err
		}
		if d.Replicas > 0 && !cluster && m.Replicas > d.Replicas {
			m.Promotable = promotable(ctx, c, m.replicas)
		}
		mu.Lock()
		defer mu.Unlock()
		out = append(out, m)
		if d.AOF && !m.AOF {
			errs = append(errs, fmt.Errorf("%s runs appendonly no: set appendonly yes (appendfsync always for a 202 to survive a crash, everysec to lose at most about 2 s of them on a crash of the machine)", m.Addr))
		}
		if d.AOF && m.Fsync == "no" {
			errs = append(errs, fmt.Errorf("%s runs appendfsync no: set appendfsync always or everysec", m.Addr))
		}
		if m.Replicas < d.Replicas {
			errs = append(errs, fmt.Errorf("%s has %d replica(s) online, want %d: add a replica (replicaof) or choose another mode", m.Addr, m.Replicas, d.Replicas))
		}
		if m.Promotable > d.Replicas {
			errs = append(errs, fmt.Errorf("%s has %d replicas that may be promoted (replica-priority not 0) and a 202 waits for %d: "+
				"Sentinel orders failover candidates by replica-priority before replication offset, so it may promote one that did not "+
				"acknowledge the last 202s; set replicas:%d, or replica-priority 0 on the replicas that must never be promoted",
				m.Addr, m.Promotable, d.Replicas, m.Promotable))
		}
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		if err := c.ForEachMaster(ctx, read); err != nil {
			return nil, err
		}
	case *redis.Client:
		if err := read(ctx, c); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("inventory: durability check: unsupported client %T", rdb)
	}
	if len(errs) > 0 {
		return out, &notProvided{mode: d, err: errors.Join(errs...)}
	}
	return out, nil
}

// notProvided is CheckDurability's error when a master it read does not provide the mode.
type notProvided struct {
	mode Durability
	err  error
}

func (e *notProvided) Error() string {
	return fmt.Sprintf("redis durability %s not provided: %v", e.mode, e.err)
}

func (e *notProvided) Unwrap() error { return e.err }

// IsNotProvided reports whether err is CheckDurability's answer that a master it read does
// not provide the mode (rather than a master it could not read).
func IsNotProvided(err error) bool {
	var np *notProvided
	return errors.As(err, &np)
}

func readMaster(ctx context.Context, c *redis.Client) (MasterDurability, error) {
	m := MasterDurability{Addr: c.Options().Addr}
	info, err := c.Info(ctx, "persistence", "replication", "server").Result()
	if err != nil {
		return m, fmt.Errorf("%s: INFO: %w", m.Addr, err)
	}
	port := ""
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case k == "aof_enabled":
			m.AOF = v == "1"
		case k == "tcp_port":
			port = v
		case strings.HasPrefix(k, "slave") && k != "slave_read_only" && strings.Contains(v, "state=online"):
			m.Replicas++
			if a := replicaAddr(v); a != "" {
				m.replicas = append(m.replicas, a)
			}
		}
	}
	if m.Addr == "FailoverClient" {
		m.Addr = "the Sentinel master (port " + port + ")"
	}
	// CONFIG may be renamed away on managed Redis: then the fsync policy is unknown.
	if v, err := c.ConfigGet(ctx, "appendfsync").Result(); err == nil {
		m.Fsync = v["appendfsync"]
	}
	return m, nil
}

// replicaAddr reads host:port from a master's INFO line of a replica
// ("ip=10.0.0.2,port=6379,state=online,..."), "" when it has none.
func replicaAddr(v string) string {
	var ip, port string
	for _, f := range strings.Split(v, ",") {
		k, x, _ := strings.Cut(f, "=")
		switch k {
		case "ip":
			ip = x
		case "port":
			port = x
		}
	}
	if ip == "" || port == "" {
		return ""
	}
	return net.JoinHostPort(ip, port)
}

// promotable counts the replicas at addrs a Sentinel failover may promote: replica-priority
// (INFO replication's slave_priority) not 0. Each is reached with the master's client options
// (credentials, TLS); one that cannot be read counts as promotable.
func promotable(ctx context.Context, master *redis.Client, addrs []string) int {
	n := 0
	for _, a := range addrs {
		o := *master.Options()
		o.Addr, o.Dialer, o.OnConnect = a, nil, nil
		c := redis.NewClient(&o)
		info, err := c.Info(ctx, "replication").Result()
		c.Close()
		if err != nil || infoField(info, "slave_priority") != "0" {
			n++
		}
	}
	return n
}

// infoField is the value of field k in an INFO answer, "" when absent.
func infoField(info, k string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), k+":"); ok {
			return v
		}
	}
	return ""
}

// FsyncHorizon is how old a journal entry must be (by its stream id's time) before it is
// surely on disk of every master in ms, for the relay: 0 when every master fsyncs each write
// (appendfsync always) or the mode has no AOF; else EverysecHorizon (appendfsync everysec
// fsyncs about once a second and Redis postpones a write by up to 2 s behind a slow fsync).
func FsyncHorizon(d Durability, ms []MasterDurability) time.Duration {
	if !d.AOF {
		return 0
	}
	for _, m := range ms {
		if m.Fsync != "always" {
			return EverysecHorizon
		}
	}
	return 0
}

// EverysecHorizon: see FsyncHorizon.
const EverysecHorizon = 3 * time.Second
