// Package inventory owns an activity's stock in Redis: the stock split over shards, the
// reservation script on the buyer's home shard, the moves of units between shards, the
// reshard to a new layout, the detection of a Redis that lost data and the rebuild from
// MySQL, and the ledger the order pipeline drives. MySQL (package order) has the last word
// on what is sold; this package decides fast and never sells what it does not hold.
// docs/DESIGN.md describes the key layout and the protocol.
//
// Five concepts, one package (they share the Store's layout cache and the key names):
//
//	concept                         files                                 entry points
//	the reservation                 store.go reserve.go reserve_args.go   New, Store.Create, Store.Reserve,
//	                                batch.go record.go replay.go          Store.Replay, Store.IssueToken,
//	                                user.go token.go journal.go keys.go   ParseJournalEntry, Shard, Meta
//	stock between shards            transit.go refresh.go                 Mover, Mover.Settle, Store.Recover,
//	                                                                      Store.Run (refresh, sold-out learning)
//	layouts: reshard, retire, end   reshard.go retire.go lifecycle.go     Store.Reshard, Store.Retire,
//	                                                                      Store.End, Store.Purge
//	a Redis that lost data          generation.go rollback.go             Store.Generation, Durability,
//	                                durability.go restore.go refuse.go    Store.Fence, Store.Rebuild, Ledger.Refuse
//	the ledger of the order side    ledger.go                             Ledger: Ack, Confirm, Fail, Refund,
//	                                                                      Counts, NewPendingScan
//
// metrics.go holds the package's Prometheus collectors. Each file opens with what it owns
// and the invariant it keeps; the Lua scripts it runs are in package lua.
package inventory
