// Package journal is the order side's reading of inventory's shard journals, the streams the
// reservation script appends one entry to per reservation (`sk:{A:e:i}:journal`, listed in
// sk:journals): which streams are journals (Stream, IsStream), the reads of a consumer
// group (Reader.Read for entries never delivered, Reader.Claim for entries left pending too
// long), each entry decoded with inventory.ParseJournalEntry, and the acknowledgement that
// counts an entry's units as relayed once and takes it out of the journal (Reader.Ack,
// inventory_ack.lua: one trim below the oldest entry the group still needs, and one XDEL of
// the entries acknowledged ahead of it).
// The settling of a reservation after its order (Confirm, Fail, Refund, Counts) is
// inventory.Ledger's. docs/DESIGN.md describes the relay that drives it.
package journal
