package order

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"regexp"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// DefaultTopic is the queue topic of reservations (docs/DESIGN.md).
const DefaultTopic = "seckill-reservations"

// RocketMQOptions configure NewRocketMQ.
type RocketMQOptions struct {
	// NameServer lists name server addresses as IP:port (required; a host name is refused
	// by the client).
	NameServer []string
	// Topic defaults to DefaultTopic.
	Topic string
	// ProducerGroup and ConsumerGroup default to "seckill-relay" and "seckill-writer".
	ProducerGroup, ConsumerGroup string
	// InstanceName must be unique per process and component (the client shares one
	// connection set per instance name); it defaults to a name made of the groups and the
	// creation time.
	InstanceName string
	// BrokerAddrs are where the topic is created if it does not exist; empty means "ask the
	// name server for every master broker".
	BrokerAddrs []string
	// QueueNums is the number of queues of a created topic (default 8).
	QueueNums int
	// ConsumeBatch is the most messages handed to the handler at once (default 64).
	ConsumeBatch int
	// MaxReconsumeTimes bounds RocketMQ's own redeliveries before its dead letter queue
	// (default math.MaxInt32, that is never: the writer dead-letters poison messages itself
	// and hands back only messages that wait for MySQL or Redis, which must reach MySQL
	// however long the outage lasts; with a broker whose delay levels are all 1 s, 1,000
	// redeliveries were a few hours).
	MaxReconsumeTimes int32
	// SendTimeout bounds one send (default 3 s).
	SendTimeout time.Duration
	// Logger receives the component's own log lines (default slog.Default()).
	Logger *slog.Logger
}

// RocketMQ is a Publisher and Subscriber on one RocketMQ topic. The producer starts with
// NewRocketMQ; the push consumer starts with Subscribe. Close shuts both down.
type RocketMQ struct {
	opts     RocketMQOptions
	log      *slog.Logger
	producer rocketmq.Producer

	mu       sync.Mutex
	consumer rocketmq.PushConsumer
	closed   bool
}

var (
	_ Publisher  = (*RocketMQ)(nil)
	_ Subscriber = (*RocketMQ)(nil)
)

// ErrSendNotOK is returned by Publish when the broker answered a send with a status other
// than SendOK.
var ErrSendNotOK = errors.New("order: rocketmq send not ok")

// NewRocketMQ creates the topic if it does not exist (so a consumer can start on it) and
// starts the producer.
func NewRocketMQ(opts RocketMQOptions) (*RocketMQ, error) {
	if len(opts.NameServer) == 0 {
		return nil, errors.New("order: rocketmq: no name server")
	}
	if opts.Topic == "" {
		opts.Topic = DefaultTopic
	}
	if opts.ProducerGroup == "" {
		opts.ProducerGroup = "seckill-relay"
	}
	if opts.ConsumerGroup == "" {
		opts.ConsumerGroup = "seckill-writer"
	}
	if opts.InstanceName == "" {
		opts.InstanceName = fmt.Sprintf("%s-%s-%d", opts.ProducerGroup, opts.ConsumerGroup, time.Now().UnixNano())
	}
	if opts.QueueNums <= 0 {
		opts.QueueNums = 8
	}
	if opts.ConsumeBatch <= 0 {
		opts.ConsumeBatch = 64
	}
	if opts.MaxReconsumeTimes == 0 {
		opts.MaxReconsumeTimes = math.MaxInt32
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = 3 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	r := &RocketMQ{opts: opts, log: log.With("component", "rocketmq", "topic", opts.Topic)}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := r.ensureTopic(ctx); err != nil {
		return nil, err
	}
	p, err := rocketmq.NewProducer(
		producer.WithNameServer(opts.NameServer),
		producer.WithGroupName(opts.ProducerGroup),
		producer.WithInstanceName(opts.InstanceName+"-producer"),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(opts.SendTimeout),
	)
	if err != nil {
		return nil, fmt.Errorf("order: rocketmq producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("order: rocketmq producer start: %w", err)
	}
	r.producer = p
	return r, nil
}

// ensureTopic creates the topic on every master broker unless the name server already has a
// route for it. Creating an existing topic is harmless (the broker updates its config).
func (r *RocketMQ) ensureTopic(ctx context.Context) error {
	brokers := r.opts.BrokerAddrs
	if len(brokers) == 0 {
		var err error
		if brokers, err = masterBrokers(ctx, r.opts.NameServer); err != nil {
			return fmt.Errorf("order: rocketmq: find brokers: %w", err)
		}
	}
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(r.opts.NameServer)))
	if err != nil {
		return fmt.Errorf("order: rocketmq admin: %w", err)
	}
	defer adm.Close()
	// The consumer group's retry topic is created too: otherwise the client learns its route
	// only on its 30 s name-server poll and takes it on the next 20 s rebalance, so messages
	// the writer sent back during a MySQL outage would wait up to ~50 s after MySQL returns.
	topics := []struct {
		name   string
		queues int
	}{{r.opts.Topic, r.opts.QueueNums}}
	if r.opts.ConsumerGroup != "" {
		topics = append(topics, struct {
			name   string
			queues int
		}{"%RETRY%" + r.opts.ConsumerGroup, 1})
	}
	for _, b := range brokers {
		for _, tp := range topics {
			err := adm.CreateTopic(ctx, admin.WithTopicCreate(tp.name), admin.WithBrokerAddrCreate(b),
				admin.WithReadQueueNums(tp.queues), admin.WithWriteQueueNums(tp.queues))
			if err != nil {
				return fmt.Errorf("order: rocketmq: create topic %s on %s: %w", tp.name, b, err)
			}
		}
	}
	return nil
}

// Publish sends the messages as one batch (key = reservation id, body = JSON) and returns
// nil only if the broker answered SendOK.
func (r *RocketMQ) Publish(ctx context.Context, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	batch := make([]*primitive.Message, 0, len(msgs))
	for _, m := range msgs {
		body, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("order: encode %s: %w", m.ReservationID, err)
		}
		pm := primitive.NewMessage(r.opts.Topic, body)
		pm.WithKeys([]string{m.ReservationID})
		batch = append(batch, pm)
	}
	res, err := r.producer.SendSync(ctx, batch...)
	if err != nil {
		return fmt.Errorf("order: rocketmq send: %w", err)
	}
	if res == nil || res.Status != primitive.SendOK {
		st := -1
		if res != nil {
			st = int(res.Status)
		}
		return fmt.Errorf("%w: status %d", ErrSendNotOK, st)
	}
	return nil
}

// Subscribe starts a push consumer (clustering, from the first offset for a new group)
// that hands batches to handler. A handler error or panic makes RocketMQ redeliver the
// batch later; a body that does not decode is logged and dropped (it can never become an
// order, and holding it would block its queue).
func (r *RocketMQ) Subscribe(handler func(ctx context.Context, msgs []Message) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.consumer != nil {
		return errors.New("order: rocketmq: already subscribed")
	}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer(r.opts.NameServer),
		consumer.WithGroupName(r.opts.ConsumerGroup),
		consumer.WithInstance(r.opts.InstanceName+"-consumer"),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumeMessageBatchMaxSize(r.opts.ConsumeBatch),
		consumer.WithPullBatchSize(int32(r.opts.ConsumeBatch)),
		consumer.WithMaxReconsumeTimes(r.opts.MaxReconsumeTimes),
	)
	if err != nil {
		return fmt.Errorf("order: rocketmq consumer: %w", err)
	}
	err = c.Subscribe(r.opts.Topic, consumer.MessageSelector{}, func(ctx context.Context, ext ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		msgs := make([]Message, 0, len(ext))
		for _, e := range ext {
			var m Message
			if err := json.Unmarshal(e.Body, &m); err != nil {
				r.log.Error("dropping undecodable message", "msgId", e.MsgId, "err", err)
				continue
			}
			m.Attempt = int(e.ReconsumeTimes) + 1
			msgs = append(msgs, m)
		}
		if len(msgs) == 0 {
			return consumer.ConsumeSuccess, nil
		}
		if err := safeHandle(ctx, handler, msgs, r.log); err != nil {
			// The error is deliberately not returned: the client acks on ConsumeSuccess
			// only, and logs a returned error on its own.
			return consumer.ConsumeRetryLater, nil
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		return fmt.Errorf("order: rocketmq subscribe: %w", err)
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("order: rocketmq consumer start: %w", err)
	}
	r.consumer = c
	return nil
}

// Close shuts the consumer (in-flight results are dropped, so those messages come again)
// and the producer down.
func (r *RocketMQ) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if r.consumer != nil {
		errs = append(errs, r.consumer.Shutdown())
	}
	if r.producer != nil {
		errs = append(errs, r.producer.Shutdown())
	}
	return errors.Join(errs...)
}

// brokerAddrRe finds a master (id 0) address in the name server's cluster info, whose body
// is fastjson with unquoted integer keys: "brokerAddrs":{0:"127.0.0.1:10911",1:"..."}.
var brokerAddrRe = regexp.MustCompile(`"brokerAddrs":\{[^}]*?\b0:"([^"]+)"`)

// masterBrokers asks the first reachable name server for its cluster info (remoting
// request GET_BROKER_CLUSTER_INFO) and returns every master broker address. The Go client
// has no public call for this.
func masterBrokers(ctx context.Context, nameServers []string) ([]string, error) {
	var errs []error
	for _, ns := range nameServers {
		body, err := remotingCall(ctx, ns, 106)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var out []string
		for _, m := range brokerAddrRe.FindAllSubmatch(body, -1) {
			out = append(out, string(m[1]))
		}
		if len(out) == 0 {
			errs = append(errs, fmt.Errorf("%s: no master broker registered", ns))
			continue
		}
		return out, nil
	}
	return nil, errors.Join(errs...)
}

// remotingCall sends one RocketMQ remoting request with a JSON header and no body and
// returns the response body. Frame: int32 total length, int32 header length (top byte =
// serialisation type 0, JSON), header, body.
func remotingCall(ctx context.Context, addr string, code int) ([]byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
	}
	hdr, _ := json.Marshal(map[string]any{"code": code, "language": "GO", "version": 317, "opaque": 1, "flag": 0, "extFields": map[string]string{}})
	frame := make([]byte, 8+len(hdr))
	binary.BigEndian.PutUint32(frame[0:], uint32(4+len(hdr)))
	binary.BigEndian.PutUint32(frame[4:], uint32(len(hdr)))
	copy(frame[8:], hdr)
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	br := bufio.NewReader(conn)
	var lens [8]byte
	if _, err := io.ReadFull(br, lens[:]); err != nil {
		return nil, err
	}
	total := binary.BigEndian.Uint32(lens[0:])
	hlen := binary.BigEndian.Uint32(lens[4:]) & 0xFFFFFF
	if total < 4+hlen || total > 16<<20 {
		return nil, fmt.Errorf("remoting: bad frame lengths %d/%d", total, hlen)
	}
	rest := make([]byte, total-4)
	if _, err := io.ReadFull(br, rest); err != nil {
		return nil, err
	}
	var rh struct {
		Code   int    `json:"code"`
		Remark string `json:"remark"`
	}
	if err := json.Unmarshal(rest[:hlen], &rh); err != nil {
		return nil, fmt.Errorf("remoting: header: %w", err)
	}
	if rh.Code != 0 {
		return nil, fmt.Errorf("remoting: code %d: %s", rh.Code, rh.Remark)
	}
	return rest[hlen:], nil
}
