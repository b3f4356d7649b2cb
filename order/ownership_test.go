package order

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestOrderNamesNoInventoryKey keeps stock inventory's: order's code reaches reservations
// and stock through inventory.Ledger's verbs and its journals through package
// inventory/journal, never through inventory's key names.
func TestOrderNamesNoInventoryKey(t *testing.T) {
	forbidden := map[string]bool{"Shard": true, "ShardKeys": true, "Meta": true, "Token": true,
		"ParseJournal": true, "HomeShard": true}
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "inventory" && forbidden[sel.Sel.Name] {
				t.Errorf("%s: names inventory.%s", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source file checked")
	}
}
