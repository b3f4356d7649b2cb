//go:build integration

package testsvc_test

// Smoke tests of every real server that scripts/services.sh starts, each through the client the
// project uses in production. Each fails loudly when its server is missing (skips only under
// -short), so a CI run that did not start a server cannot pass.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	gomysql "github.com/go-sql-driver/mysql"
	"github.com/nacos-group/nacos-sdk-go/v2/clients"
	"github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/sql"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

// suffix returns a random hex string that keeps names of parallel test runs apart.
func suffix(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// smokeScript returns a script that is new to the server (its body carries a nonce), so its
// first Run must take the NOSCRIPT -> EVAL path and later runs the EVALSHA path. The script
// adds ARGV[1] to KEYS[1], stores ARGV[2] in KEYS[2] and returns {new value, stored value,
// whether Redis TIME answered}.
func smokeScript(nonce string) *redis.Script {
	return redis.NewScript(`-- smoke ` + nonce + `
local v = redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
redis.call('SET', KEYS[2], ARGV[2], 'EX', 60)
redis.call('EXPIRE', KEYS[1], 60)
local t = redis.call('TIME')
return {v, redis.call('GET', KEYS[2]), tonumber(t[1]) > 0 and 1 or 0}`)
}

// runSmokeScript runs the script twice on the keys of one hash tag and checks both answers.
func runSmokeScript(ctx context.Context, t *testing.T, c redis.Scripter, s *redis.Script, tag string) {
	t.Helper()
	keys := []string{"smoke:{" + tag + "}:n", "smoke:{" + tag + "}:s"}
	for i, want := range []int64{5, 10} {
		got, err := s.Run(ctx, c, keys, 5, "v"+tag).Slice()
		if err != nil {
			t.Fatalf("run #%d on tag %s: %v", i+1, tag, err)
		}
		if len(got) != 3 || got[0] != want || got[1] != "v"+tag || got[2] != int64(1) {
			t.Fatalf("run #%d on tag %s = %#v, want [%d v%s 1]", i+1, tag, got, want, tag)
		}
	}
}

func TestRedisLuaScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := testsvc.Redis(t)
	nonce := suffix(t)
	s := smokeScript(nonce)
	if ok, err := s.Exists(ctx, c).Result(); err != nil || ok[0] {
		t.Fatalf("fresh script already loaded (%v) or SCRIPT EXISTS failed: %v", ok, err)
	}
	runSmokeScript(ctx, t, c, s, "smoke-"+nonce)
	if ok, err := s.Exists(ctx, c).Result(); err != nil || !ok[0] {
		t.Fatalf("script not cached after Run (EVAL on NOSCRIPT did not happen?): %v %v", ok, err)
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "redis_version:7.") {
		t.Errorf("want Redis 7, INFO server says:\n%s", info)
	}
}

func TestRedisClusterLuaScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, ok := testsvc.RedisCluster(t).(*redis.ClusterClient)
	if !ok {
		t.Fatal("testsvc.RedisCluster is not a *redis.ClusterClient")
	}
	state, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(state, "cluster_state:ok") || !strings.Contains(state, "cluster_size:3") {
		t.Fatalf("cluster not healthy with 3 masters:\n%s", state)
	}
	nonce := suffix(t)
	s := smokeScript(nonce)
	// Pick tags until they land on every master, so the script is loaded on more than one node.
	masters := map[string]bool{}
	for i := 0; i < 64 && len(masters) < 3; i++ {
		tag := fmt.Sprintf("smoke-%s-%d", nonce, i)
		m, err := c.MasterForKey(ctx, "smoke:{"+tag+"}:n")
		if err != nil {
			t.Fatal(err)
		}
		if masters[m.Options().Addr] {
			continue
		}
		masters[m.Options().Addr] = true
		runSmokeScript(ctx, t, c, s, tag)
	}
	if len(masters) < 2 {
		t.Fatalf("tags reached only %d master(s): %v", len(masters), masters)
	}
	var mu sync.Mutex
	loaded := 0
	err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		ok, err := m.ScriptExists(ctx, s.Hash()).Result()
		if err != nil {
			return err
		}
		if ok[0] {
			mu.Lock()
			loaded++
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if loaded != len(masters) {
		t.Fatalf("script loaded on %d masters, ran on %d", loaded, len(masters))
	}
}

func TestMariaDBSchema(t *testing.T) {
	db := testsvc.MySQL(t)
	if err := sql.Migrate(db); err != nil {
		t.Fatalf("sql.Migrate: %v", err)
	}
	var tables []string
	if err := db.Raw(`SELECT table_name FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name IN ('activities', 'orders', 'compensations')
		ORDER BY table_name`).Scan(&tables).Error; err != nil {
		t.Fatal(err)
	}
	if strings.Join(tables, ",") != "activities,compensations,orders" {
		t.Fatalf("tables = %v, want activities, compensations, orders", tables)
	}

	// Unique keys: table -> comma-joined columns of each unique index.
	type col struct {
		Table, Index, Column string
	}
	var cols []col
	if err := db.Raw(`SELECT table_name AS ` + "`table`" + `, index_name AS ` + "`index`" + `, column_name AS ` + "`column`" + `
		FROM information_schema.statistics
		WHERE table_schema = DATABASE() AND non_unique = 0 AND index_name <> 'PRIMARY'
		  AND table_name IN ('activities', 'orders', 'compensations')
		ORDER BY table_name, index_name, seq_in_index`).Scan(&cols).Error; err != nil {
		t.Fatal(err)
	}
	uniques := map[string]map[string]bool{}
	idx := map[string][]string{}
	for _, c := range cols {
		k := c.Table + "." + c.Index
		idx[k] = append(idx[k], c.Column)
	}
	for k, cs := range idx {
		table := strings.SplitN(k, ".", 2)[0]
		if uniques[table] == nil {
			uniques[table] = map[string]bool{}
		}
		uniques[table][strings.Join(cs, ",")] = true
	}
	for _, tt := range []struct{ table, give string }{
		{"orders", "reservation_id"},
		{"orders", "activity_id,user_id,seq"},
		{"compensations", "reservation_id"},
	} {
		if !uniques[tt.table][tt.give] {
			t.Errorf("table %s has no unique key on (%s); unique keys: %v", tt.table, tt.give, uniques[tt.table])
		}
	}

	// The unique key is enforced by the server, and the grants let tests read status counters.
	aid := "smoke-" + suffix(t)
	t.Cleanup(func() { db.Exec("DELETE FROM orders WHERE activity_id = ?", aid) })
	first := sql.Order{ReservationID: aid + ".1.0.1", ActivityID: aid, UserID: "u1", Quantity: 1, Seq: 1, Status: "CONFIRMED"}
	if err := db.Create(&first).Error; err != nil {
		t.Fatal(err)
	}
	dup := sql.Order{ReservationID: aid + ".1.0.2", ActivityID: aid, UserID: "u1", Quantity: 1, Seq: 1, Status: "CONFIRMED"}
	err := db.Create(&dup).Error
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1062 {
		t.Fatalf("duplicate (activity, user, seq) insert: got %v, want MySQL error 1062", err)
	}
	var status struct {
		VariableName string `gorm:"column:Variable_name"`
		Value        string `gorm:"column:Value"`
	}
	if err := db.Raw("SHOW GLOBAL STATUS LIKE 'Com_select'").Scan(&status).Error; err != nil || status.Value == "" {
		t.Fatalf("SHOW GLOBAL STATUS: %v %+v", err, status)
	}
}

func TestRocketMQProduceConsume(t *testing.T) {
	ns := testsvc.RocketMQ(t)
	id := suffix(t)
	topic := "smoke-" + id
	body := "hello " + id
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(testsvc.RocketMQBroker)); err != nil {
		t.Fatalf("create topic %s on %s: %v", topic, testsvc.RocketMQBroker, err)
	}

	got := make(chan string, 16)
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{ns}),
		consumer.WithGroupName("smoke-c-"+id),
		consumer.WithInstance("smoke-c-"+id),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			got <- string(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The route of a just-created topic can take a moment to reach the name server.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err = c.Start(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("push consumer start: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	defer c.Shutdown()

	p, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{ns}),
		producer.WithGroupName("smoke-p-"+id),
		producer.WithInstanceName("smoke-p-"+id),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)).WithKeys([]string{id}))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("send status = %v, want SendOK (%s)", res.Status, res)
	}

	select {
	case b := <-got:
		if b != body {
			t.Fatalf("consumed %q, want %q", b, body)
		}
	case <-ctx.Done():
		t.Fatalf("message %s not consumed within the deadline", res.MsgID)
	}
}

func TestNacosPublishListen(t *testing.T) {
	admin := testsvc.NacosAdmin(t)
	addr := admin.Addr
	host, port, err := testsvc.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cc, err := clients.NewConfigClient(vo.NacosClientParam{
		ClientConfig: &constant.ClientConfig{
			NamespaceId:         "", // "" is public; "public" silently breaks pushes (INFRA.md 4.5)
			TimeoutMs:           5000,
			NotLoadCacheAtStart: true,
			CacheDir:            dir + "/cache",
			LogDir:              dir + "/log",
			LogLevel:            "error",
			Username:            testsvc.NacosUsername,
			Password:            testsvc.NacosPassword,
		},
		ServerConfigs: []constant.ServerConfig{{IpAddr: host, Port: port, ContextPath: "/nacos"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.CloseClient()

	id := suffix(t)
	dataID, group := "smoke-"+id+".yaml", "SECKILL_SMOKE"
	got := make(chan string, 16)
	err = cc.ListenConfig(vo.ConfigParam{DataId: dataID, Group: group, OnChange: func(_, _, _, data string) {
		got <- data
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Delete(t, "", dataID, group) })

	// Listener callbacks run in goroutines of their own and may coalesce, so wait for the
	// wanted content rather than for "the next" callback.
	waitFor := func(want string, d time.Duration) bool {
		t.Helper()
		deadline := time.After(d)
		for {
			select {
			case d := <-got:
				if d == want {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	first := "killSwitch: false\n# " + id + " v1\n"
	admin.Publish(t, "", dataID, group, first)
	if !waitFor(first, 20*time.Second) {
		t.Fatalf("listener did not receive %q within 20 s", first)
	}
	// A change published within ~5 s of ListenConfig can reach the SDK only at its 5 s resync,
	// and a server may push a change a moment before its queries serve it (the SDK then
	// fetches the old content and drops the push; the service polls to cover both, see
	// config.NacosSource). A later edit must still arrive: up to three fresh edits, 8 s each.
	var second string
	for attempt := 1; ; attempt++ {
		second = fmt.Sprintf("killSwitch: true\n# %s v%d\n", id, attempt+1)
		admin.Publish(t, "", dataID, group, second)
		if waitFor(second, 8*time.Second) {
			break
		}
		if attempt == 3 {
			t.Fatalf("listener received none of three edits within 8 s each")
		}
		t.Logf("edit %d not pushed within 8 s; publishing another", attempt)
	}

	content, err := cc.GetConfig(vo.ConfigParam{DataId: dataID, Group: group})
	if err != nil || content != second {
		t.Fatalf("GetConfig = %q, %v; want %q", content, err, second)
	}
}
