// Package archtest has only tests: they keep the import graph and the layers drawn in
// docs/DESIGN.md ("Packages and who depends on whom") true to the code, and the top level
// to the owner's layout (cmd, app, limiter, inventory, order, config, lua, sql, and internal/
// for the shared vocabulary; cmd/seckill imports only app). They read the source tree with
// go/build and need no server: go test ./internal/archtest/.
package archtest
