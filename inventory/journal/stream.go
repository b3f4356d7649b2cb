package journal

import (
	"strconv"
	"strings"

	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/inventory"
)

// Stream returns the shard whose journal stream is named stream.
func Stream(stream string) (inventory.ShardKeys, bool) {
	inner, ok := strings.CutPrefix(stream, keyspace.Prefix+"{")
	if !ok {
		return inventory.ShardKeys{}, false
	}
	inner, ok = strings.CutSuffix(inner, "}:journal")
	if !ok {
		return inventory.ShardKeys{}, false
	}
	i := strings.LastIndexByte(inner, ':')
	if i < 0 {
		return inventory.ShardKeys{}, false
	}
	j := strings.LastIndexByte(inner[:i], ':')
	if j < 0 {
		return inventory.ShardKeys{}, false
	}
	e, err1 := strconv.Atoi(inner[j+1 : i])
	sh, err2 := strconv.Atoi(inner[i+1:])
	if err1 != nil || err2 != nil {
		return inventory.ShardKeys{}, false
	}
	k := inventory.Shard(inner[:j], e, sh)
	if k.Journal() != stream {
		return inventory.ShardKeys{}, false
	}
	return k, true
}

// IsStream reports whether stream names a shard's journal stream.
func IsStream(stream string) bool {
	_, ok := Stream(stream)
	return ok
}
