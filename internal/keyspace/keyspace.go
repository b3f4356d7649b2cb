// Package keyspace owns what every part touching Redis agrees on: the form of an activity
// id (it becomes part of key names), the bound on an activity's stock shards, and the
// instance-wide key and channel names with their namespace. It imports nothing of the
// service. The keys of one activity are inventory's; the limiter's budget and IP keys are
// the limiter's; docs/DESIGN.md lists them all.
package keyspace

// MaxShards is the largest stock shard count an activity may have.
const MaxShards = 1024

// MaxUserID is the largest user id, in bytes, the service takes: X-User-Id, a JWT subject, a
// blacklist entry (config.ValidUserID) and a reservation (inventory.Reserve). The user id
// goes into reservation records and journal entries; the order side accepts longer ones
// written by earlier releases (order.Message.Validate).
const MaxUserID = 128

// MaxIdempotencyKey is the largest idempotency key, in bytes, the service takes: the
// Idempotency-Key header and a reservation (inventory.Reserve); a key the server generates
// is shorter.
const MaxIdempotencyKey = 128

// ValidName reports whether id matches [A-Za-z0-9_-]{1,64}, the form of every name that
// becomes part of a Redis key or a metric label: activity ids, campaign ids and channel
// names. A name is validated before it reaches a key.
func ValidName(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Prefix starts every Redis key and channel name of the service: the activities' keys
// ("sk:{A}:meta", "sk:{A:e:h}:stock"), the limiter's, the locks, the instance-wide names below.
const Prefix = "sk:"

// Instance-wide keys and the event channel, of the default namespace (see Namespaced).
const (
	Journals   = Prefix + "journals"   // set: names of all journal streams (the relay's work list)
	Activities = Prefix + "activities" // set: all activity ids
	Instances  = Prefix + "instances"  // zset: instance id -> last heartbeat ms
	Events     = Prefix + "events"     // pub/sub channel: soldout, layout and created events
)

// Namespaced returns an instance-wide key or channel name within a namespace: name itself
// for the empty namespace (the default deployment), else name + ":" + ns. Deployments (and
// test runs) that share one Redis keep their work lists, heartbeats, budgets and events
// apart with distinct namespaces. Activity keys are not namespaced: activity ids are unique
// per Redis.
func Namespaced(ns, name string) string { return name + Suffix(ns) }

// Suffix is what Namespaced appends to a name: "" for the default namespace, else ":" + ns.
// Parts that build many names of one namespace keep it instead of calling Namespaced.
func Suffix(ns string) string {
	if ns == "" {
		return ""
	}
	return ":" + ns
}
