package inventory

import (
	"context"
	"errors"
	"fmt"
)

// WhyRefused is a failed record's why field when MySQL refused its order (Refuse).
const WhyRefused = "REFUSED"

// Refuse fails a reservation whose order MySQL refused (the activity's stock or the buyer's
// limit was reached where the orders live: Redis lost or duplicated state and sold a unit it
// did not have). PENDING -> FAILED with why = REFUSED, and nothing is given back: Redis
// already counts the unit it sold twice, so a credit would put a phantom unit on sale, to be
// sold and refused again. It returns FailedNow, AlreadyFailed, FailConfirmed or FailMissing
// (the last two change nothing). The caller fences the activity (FenceRefused).
func (l *Ledger) Refuse(ctx context.Context, rid string) (FailResult, error) {
	k, n, ok := ParseReservationID(rid)
	if !ok {
		return FailUnknown, fmt.Errorf("%w: reservation id %q", ErrInvalid, rid)
	}
	res, err := l.run(ctx, l.fail, []string{k.Users(), k.Stock(), k.Stats(), k.Drained(), k.XOut()}, RecordField(n), rid, "refused").Int64Slice()
	if err != nil {
		return FailUnknown, fmt.Errorf("inventory: refuse %s: %w", rid, err)
	}
	if len(res) != 2 {
		return FailUnknown, fmt.Errorf("inventory: inventory_fail.lua returned %v", res)
	}
	return FailResultOf(res[0])
}

// FenceRefused fences an activity whose order MySQL refused: Redis's counts of it are wrong,
// so no instance may sell from them until a restore rebuilds them from MySQL. gen is the
// activity's generation in MySQL when it refused. While meta names that generation (or the
// rolled-back fence already), meta's generation becomes the rolled-back fence, so every
// instance takes the activity for recovering within one refresh, and so does the generation
// key of every shard of every layout meta names, so the reserve script refuses at once. Meta
// naming another generation is left alone: a restore's fence, a restore that moved the
// activity on since (a refusal of the old state must not fence the new one), or a loss the
// instances see already. A row of a release before generations (gen "") fences a meta that
// names none. An activity without meta is fenced already. Idempotent.
func (l *Ledger) FenceRefused(ctx context.Context, activity, gen string) error {
	_, lays, err := l.layouts(ctx, activity)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	fenced, err := fenceMeta(ctx, l.rdb, l.fence, activity, gen)
	if err != nil || !fenced {
		return err
	}
	var keys []ShardKeys
	for _, lay := range lays {
		for i := 0; i < lay.Shards; i++ {
			keys = append(keys, Shard(activity, lay.Epoch, i))
		}
	}
	return fenceShards(ctx, l.rdb, keys)
}
