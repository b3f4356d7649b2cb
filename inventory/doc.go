// Package inventory owns an activity's stock in Redis: the stock split over shards, the
// reservation script on the buyer's home shard, the moves of units between shards, the
// reshard to a new layout, the detection of a Redis that lost data and the rebuild from
// MySQL, and the ledger the order pipeline drives. MySQL (package order) has the last word
// on what is sold; this package decides fast and never sells what it does not hold.
// docs/DESIGN.md describes the key layout and the protocol.
//
// Five concepts, one package (they share the Store's layout cache and the key names), and
// the journals as the order side reads them in the subpackage inventory/journal:
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
//	the ledger of the order side    ledger.go                             Ledger: Confirm, Fail, Refund,
//	                                                                      Counts, NewPendingScan
//	the journals, read and acked    journal/ (package inventory/journal)  journal.Stream, journal.Reader:
//	                                                                      Read, Claim, Ack
//
// Package journal imports this one (the key names, ParseJournalEntry) and owns the reads the
// relay makes of a journal (XREADGROUP, XAUTOCLAIM) and their acknowledgement
// (inventory_ack.lua); nothing here calls it. The ledger's other verbs stay here: they run
// through what the Store shares unexported (Durability's script call, meta's layouts, the
// records, the fences, the stats fields a retire sums), and this package's tests of the
// Store settle reservations with them.
//
// metrics.go holds the package's Prometheus collectors. Each file opens with what it owns
// and the invariant it keeps; the Lua scripts it runs are in package lua.
package inventory
