package archtest

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modulePath is the module whose packages the graph shows.
const modulePath = "github.com/seckill/seckill"

// designDoc is the document holding the graph and the layers, from the module root.
const designDoc = "docs/DESIGN.md"

// Fence info strings of the two blocks in designDoc.
const (
	graphFence  = "imports"
	layersFence = "layers"
)

// update makes TestImportGraphMatchesDesign write the code's graph into docs/DESIGN.md
// instead of failing on a difference: go test ./internal/archtest/ -update.
var update = flag.Bool("update", false, "rewrite the imports block of docs/DESIGN.md from the code")

// graph maps a package (its path inside the module, "." for the root) to the module packages
// its non-test files import, sorted.
type graph map[string][]string

// moduleRoot walks up from the working directory to the go.mod of modulePath.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modFilePath(string(b)) == modulePath {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func modFilePath(gomod string) string {
	for line := range strings.Lines(gomod) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// scan reads every package of the module under root (other modules, third_party, testdata
// and hidden directories left out) with the build tags `make test` uses, and returns the
// module-internal imports of its non-test files. Test files are not part of the graph:
// nothing imports a test, so a test may import any package.
func scan(root string) (graph, error) {
	ctx := build.Default
	ctx.BuildTags = []string{"integration"}
	g := graph{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "third_party" || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (deploy/validate)
			}
		}
		p, err := ctx.ImportDir(path, 0)
		if _, ok := errors.AsType[*build.NoGoError](err); ok {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		deps := []string{}
		for _, imp := range p.Imports {
			if dep, ok := internal(imp); ok && dep != rel {
				deps = append(deps, dep)
			}
		}
		slices.Sort(deps)
		g[rel] = slices.Compact(deps)
		return nil
	})
	return g, err
}

// internal returns imp's path inside the module, if imp is a package of the module.
func internal(imp string) (string, bool) {
	if imp == modulePath {
		return ".", true
	}
	rest, ok := strings.CutPrefix(imp, modulePath+"/")
	return rest, ok
}

// fence returns the lines of the first fenced block of md whose info string is info, and
// whether there is one.
func fence(md, info string) ([]string, bool) {
	var lines []string
	in, found := false, false
	sc := bufio.NewScanner(strings.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```"+info:
			in, found = true, true
		case in && strings.TrimSpace(line) == "```":
			return lines, true
		case in:
			lines = append(lines, line)
		}
	}
	return lines, found && !in
}

// docGraph is the graph block: "pkg -> dep dep ...   # what it is" per line ("-> (none)" for
// a package that imports no module package); lines starting with # are comments.
type docGraph struct {
	g     graph
	notes map[string]string // package -> its comment
}

func parseGraph(lines []string) (docGraph, error) {
	d := docGraph{g: graph{}, notes: map[string]string{}}
	for i, line := range lines {
		line, note, _ := strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		pkg, deps, ok := strings.Cut(line, "->")
		pkg = strings.TrimSpace(pkg)
		if !ok || pkg == "" || strings.ContainsAny(pkg, " \t") {
			return d, fmt.Errorf("line %d of the %s block: %q is not `pkg -> deps`", i+1, graphFence, line)
		}
		if _, dup := d.g[pkg]; dup {
			return d, fmt.Errorf("line %d of the %s block: %s listed twice", i+1, graphFence, pkg)
		}
		list := []string{}
		for _, dep := range strings.Fields(deps) {
			if dep != "(none)" {
				list = append(list, dep)
			}
		}
		slices.Sort(list)
		d.g[pkg] = slices.Compact(list)
		if note = strings.TrimSpace(note); note != "" {
			d.notes[pkg] = note
		}
	}
	return d, nil
}

// diffGraph names every difference between the code's graph and the document's.
func diffGraph(code, doc graph) []string {
	var out []string
	for _, pkg := range sortedKeys(code) {
		deps, ok := doc[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("package %s is missing from the graph", pkg))
			continue
		}
		for _, dep := range code[pkg] {
			if !slices.Contains(deps, dep) {
				out = append(out, fmt.Sprintf("missing edge %s -> %s (the code has it)", pkg, dep))
			}
		}
		for _, dep := range deps {
			if !slices.Contains(code[pkg], dep) {
				out = append(out, fmt.Sprintf("extra edge %s -> %s (the code has none)", pkg, dep))
			}
		}
	}
	for _, pkg := range sortedKeys(doc) {
		if _, ok := code[pkg]; !ok {
			out = append(out, fmt.Sprintf("package %s is in the graph but not in the code", pkg))
		}
	}
	return out
}

// parseLayers reads the layers block: one layer a line, the top layer first, packages
// separated by spaces; # starts a comment. It returns each package's layer index (0 = top).
func parseLayers(lines []string) (map[string]int, int, error) {
	layer := map[string]int{}
	n := 0
	for _, line := range lines {
		line, _, _ = strings.Cut(line, "#")
		pkgs := strings.Fields(line)
		if len(pkgs) == 0 {
			continue
		}
		for _, p := range pkgs {
			if prev, dup := layer[p]; dup {
				return nil, 0, fmt.Errorf("the %s block lists %s in layers %d and %d", layersFence, p, prev+1, n+1)
			}
			layer[p] = n
		}
		n++
	}
	return layer, n, nil
}

// checkLayers names every package of code that is in no layer, every package of a layer
// that is not in the code, and every import that does not go to a lower layer.
func checkLayers(code graph, layer map[string]int) []string {
	var out []string
	importedBy := map[string][]string{}
	for _, pkg := range sortedKeys(code) {
		for _, dep := range code[pkg] {
			importedBy[dep] = append(importedBy[dep], pkg)
		}
	}
	for _, pkg := range sortedKeys(code) {
		if _, ok := layer[pkg]; !ok {
			out = append(out, fmt.Sprintf("package %s is in no layer: add it to a line below every package that imports it (%s) and above every one it imports (%s)",
				pkg, orNone(importedBy[pkg]), orNone(code[pkg])))
		}
	}
	for _, pkg := range sortedKeys(layer) {
		if _, ok := code[pkg]; !ok {
			out = append(out, fmt.Sprintf("package %s is in layer %d but not in the code", pkg, layer[pkg]+1))
		}
	}
	for _, pkg := range sortedKeys(code) {
		from, ok := layer[pkg]
		if !ok {
			continue
		}
		for _, dep := range code[pkg] {
			to, ok := layer[dep]
			switch {
			case !ok:
			case to < from:
				out = append(out, fmt.Sprintf("upward import %s -> %s: %s is in layer %d, above %s's layer %d", pkg, dep, dep, to+1, pkg, from+1))
			case to == from:
				out = append(out, fmt.Sprintf("sideways import %s -> %s: both in layer %d; imports go only to lower layers", pkg, dep, from+1))
			}
		}
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// maxDepWidth bounds the column of imports that notes are aligned after; a longer list of
// imports pushes its own note further right.
const maxDepWidth = 40

// render writes the graph block for code, keeping the notes of the document's block: top
// layer first, packages in no layer last, names sorted within a layer.
func render(code graph, notes map[string]string, layer map[string]int) string {
	pkgs := sortedKeys(code)
	rank := func(p string) int {
		if l, ok := layer[p]; ok {
			return l
		}
		return len(pkgs)
	}
	slices.SortStableFunc(pkgs, func(a, b string) int { return rank(a) - rank(b) })
	width, depWidth := 0, 0
	deps := map[string]string{}
	for _, p := range pkgs {
		width = max(width, len(p))
		d := strings.Join(code[p], " ")
		if d == "" {
			d = "(none)"
		}
		deps[p] = d
		if len(d) <= maxDepWidth {
			depWidth = max(depWidth, len(d))
		}
	}
	var b strings.Builder
	b.WriteString("```" + graphFence + "\n")
	for _, p := range pkgs {
		line := fmt.Sprintf("%-*s -> %s", width, p, deps[p])
		if n := notes[p]; n != "" {
			line = fmt.Sprintf("%-*s -> %-*s  # %s", width, p, depWidth, deps[p], n)
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}

// replaceFence returns md with its first fenced block of that info string replaced by block
// (which carries its own fences).
func replaceFence(md, info, block string) string {
	start := strings.Index(md, "```"+info+"\n")
	if start < 0 {
		return md
	}
	end := strings.Index(md[start+len(info)+4:], "```\n")
	if end < 0 {
		return md
	}
	end += start + len(info) + 4 + len("```\n")
	return md[:start] + block + md[end:]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestImportGraphMatchesDesign compares the import graph of the code with the graph block
// of docs/DESIGN.md, and checks every import against the layers block: a package imports
// only packages of lower layers. On a difference it names each missing or extra edge and
// prints the block to paste into docs/DESIGN.md.
func TestImportGraphMatchesDesign(t *testing.T) {
	root := moduleRoot(t)
	code, err := scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(code) < 5 {
		t.Fatalf("found only %d packages under %s: the scan is broken", len(code), root)
	}
	md, err := os.ReadFile(filepath.Join(root, designDoc))
	if err != nil {
		t.Fatal(err)
	}
	layerLines, ok := fence(string(md), layersFence)
	if !ok {
		t.Fatalf("%s has no ```%s block", designDoc, layersFence)
	}
	layer, _, err := parseLayers(layerLines)
	if err != nil {
		t.Fatalf("%s: %v", designDoc, err)
	}
	graphLines, ok := fence(string(md), graphFence)
	if !ok {
		t.Fatalf("%s has no ```%s block; paste this one:\n\n%s", designDoc, graphFence, render(code, nil, layer))
	}
	doc, err := parseGraph(graphLines)
	if err != nil {
		t.Fatalf("%s: %v", designDoc, err)
	}
	block := render(code, doc.notes, layer)
	diff := diffGraph(code, doc.g)
	switch {
	case *update:
		if err := os.WriteFile(filepath.Join(root, designDoc), []byte(replaceFence(string(md), graphFence, block)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the ```%s block of %s; differences were:\n  %s", graphFence, designDoc, strings.Join(diff, "\n  "))
	case len(diff) > 0:
		t.Errorf("%s's import graph differs from the code:\n  %s\n"+
			"Replace the ```%s block of %s with the ```%s block printed on standard output (or run go test ./internal/archtest/ -update).",
			designDoc, strings.Join(diff, "\n  "), graphFence, designDoc, graphFence)
		// Printed as is, not through t.Errorf, which would indent every line.
		fmt.Printf("\n%s\n", block)
	}
	if bad := checkLayers(code, layer); len(bad) > 0 {
		t.Errorf("imports against the layers of %s (the ```%s block, top layer first):\n  %s",
			designDoc, layersFence, strings.Join(bad, "\n  "))
	}
}

// ownerLayout is the top level the owner asked for (issue 23): every package of the module
// lives under one of these directories; small shared vocabulary goes under internal/.
var ownerLayout = []string{"app", "cmd", "config", "internal", "inventory", "limiter", "lua", "order", "sql"}

// serviceMain is the service's main package and the one package it may import.
const (
	serviceMain = "cmd/seckill"
	serviceApp  = "app"
)

// layoutViolations names every package of code outside the directories of top, and every
// module import of serviceMain other than serviceApp.
func layoutViolations(code graph, top []string) []string {
	var out []string
	for _, pkg := range sortedKeys(code) {
		dir, _, _ := strings.Cut(pkg, "/")
		if !slices.Contains(top, dir) {
			out = append(out, fmt.Sprintf("package %s is outside the owner's top level (%s): move it under internal/ or into the package that uses it",
				pkg, strings.Join(top, ", ")))
		}
	}
	for _, dep := range code[serviceMain] {
		if dep != serviceApp {
			out = append(out, fmt.Sprintf("%s imports %s: it imports only %s", serviceMain, dep, serviceApp))
		}
	}
	return out
}

// TestLayoutIsTheOwners checks the module's top level against ownerLayout and that the
// service's main imports only app.
func TestLayoutIsTheOwners(t *testing.T) {
	code, err := scan(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := code[serviceMain]; !ok {
		t.Fatalf("no package %s in the scan", serviceMain)
	}
	if bad := layoutViolations(code, ownerLayout); len(bad) > 0 {
		t.Errorf("layout:\n  %s", strings.Join(bad, "\n  "))
	}
	bad := layoutViolations(graph{"cmd/seckill": {"app", "config"}, "keyspace": {}, "internal/x": {}}, ownerLayout)
	want := []string{
		"package keyspace is outside the owner's top level",
		"cmd/seckill imports config: it imports only app",
	}
	for _, w := range want {
		if !slices.ContainsFunc(bad, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("layout check lacks %q: %q", w, bad)
		}
	}
	if len(bad) != len(want) {
		t.Errorf("layout check on a made-up graph = %q, want %d lines", bad, len(want))
	}
}

// TestCheckersFindWhatTheyMust runs the comparison and the layer check on small made-up
// graphs, so a broken checker cannot pass the real tree silently.
func TestCheckersFindWhatTheyMust(t *testing.T) {
	doc, err := parseGraph([]string{
		"# comment line",
		"app   -> inventory config  # wiring",
		"inventory -> lua",
		"lua -> (none)",
		"gone -> (none)",
	})
	if err != nil {
		t.Fatal(err)
	}
	if doc.notes["app"] != "wiring" || !slices.Equal(doc.g["app"], []string{"config", "inventory"}) || len(doc.g["lua"]) != 0 {
		t.Fatalf("parsed %+v", doc)
	}
	code := graph{
		"app":       {"inventory", "order"},
		"inventory": {"lua"},
		"lua":       {},
		"order":     {"inventory"},
		"config":    {},
	}
	got := diffGraph(code, doc.g)
	want := []string{
		"missing edge app -> order (the code has it)",
		"extra edge app -> config (the code has none)",
		"package config is missing from the graph",
		"package order is missing from the graph",
		"package gone is in the graph but not in the code",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("diff lacks %q: %q", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("diff = %q, want %d lines", got, len(want))
	}
	if d := diffGraph(code, code); len(d) != 0 {
		t.Errorf("a graph differs from itself: %q", d)
	}

	layer, n, err := parseLayers([]string{"app  # top", "", "order inventory", "lua stale"})
	if err != nil || n != 3 || layer["inventory"] != 1 || layer["lua"] != 2 {
		t.Fatalf("layers %v (%d), %v", layer, n, err)
	}
	code["lua"] = []string{"app"}
	bad := checkLayers(code, layer)
	for _, w := range []string{
		"upward import lua -> app: app is in layer 1, above lua's layer 3",
		"sideways import order -> inventory: both in layer 2; imports go only to lower layers",
		"package config is in no layer",
		"package stale is in layer 3 but not in the code",
	} {
		if !slices.ContainsFunc(bad, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("layer check lacks %q: %q", w, bad)
		}
	}
	if _, _, err := parseLayers([]string{"a b", "b"}); err == nil {
		t.Error("a package in two layers was accepted")
	}

	out := render(graph{"app": {"lua"}, "lua": {}}, map[string]string{"app": "wiring"}, map[string]int{"app": 0, "lua": 1})
	back, err := parseGraph(strings.Split(strings.TrimSuffix(strings.TrimPrefix(out, "```"+graphFence+"\n"), "```\n"), "\n"))
	if err != nil || diffGraph(graph{"app": {"lua"}, "lua": {}}, back.g) != nil || back.notes["app"] != "wiring" {
		t.Errorf("render does not parse back: %q -> %+v, %v", out, back, err)
	}
}
