package inventory

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// UserState is a buyer's state on its home shard: the field "<uh>" of the shard's users hash
// (ShardKeys.Users), one packed value the reservation script reads and writes whole,
//
//	<held>|<seq>|<last>|<limits>
//
// held the units held (inventory_refund.lua lowers it), seq the user's sequence (never
// lowered), last the user's latest reservation id, limits the user's token bucket and window
// counter, "tokens|tsSec|tsUsec|winStart|winPrev|winCur" (lua/inventory_reserve.lua; empty
// parts for a dimension never used).
type UserState struct {
	Held   int64
	Seq    int64
	Last   string
	Limits string
}

// noLimits is the limits part of a user whose bucket and window were never used.
const noLimits = "|||||"

// String is the state's packed form.
func (u UserState) String() string {
	l := u.Limits
	if l == "" {
		l = noLimits
	}
	return strconv.FormatInt(u.Held, 10) + "|" + strconv.FormatInt(u.Seq, 10) + "|" + u.Last + "|" + l
}

// ParseUserState reads a packed user state; false when v is not one.
func ParseUserState(v string) (UserState, bool) {
	f := strings.SplitN(v, "|", 4)
	if len(f) != 4 {
		return UserState{}, false
	}
	held, err1 := strconv.ParseInt(f[0], 10, 64)
	seq, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return UserState{}, false
	}
	return UserState{Held: held, Seq: seq, Last: f[2], Limits: f[3]}, true
}

// ReadUserState reads the state of the user with hash uh on shard k; false when it has none.
func ReadUserState(ctx context.Context, rdb redis.Cmdable, k ShardKeys, uh string) (UserState, bool, error) {
	v, found, err := usersField(ctx, rdb, k, uh)
	if !found || err != nil {
		return UserState{}, false, err
	}
	u, ok := ParseUserState(v)
	if !ok {
		return UserState{}, false, fmt.Errorf("inventory: user %s of %s: malformed state %q", uh, k.Users(), v)
	}
	return u, true, nil
}
