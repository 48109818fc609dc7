package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the command may be: the
// verbs are flags, options and a call into a package.
const maxFuncLines = 120

// TestCommandsOnlyWire: the command's files hold no concurrency (no go
// statement, no import of sync or sync/atomic: goroutines and locks
// belong to the packages the verbs call) and no function longer than
// maxFuncLines.
func TestCommandsOnlyWire(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files++
		for _, v := range wiringViolations(fset, f) {
			t.Error(v)
		}
	}
	if files == 0 {
		t.Fatal("no source file read")
	}
}

// wiringViolations lists what in f breaks TestCommandsOnlyWire's rules.
func wiringViolations(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "sync" || p == "sync/atomic" {
			out = append(out, fset.Position(imp.Pos()).String()+": imports "+p)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, fset.Position(n.Pos()).String()+": go statement")
		case *ast.FuncDecl:
			if lines := fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1; lines > maxFuncLines {
				out = append(out, fset.Position(n.Pos()).String()+": func "+n.Name.Name+" is "+strconv.Itoa(lines)+" lines, more than "+strconv.Itoa(maxFuncLines))
			}
		}
		return true
	})
	return out
}

// TestWiringViolationsFound: the rules see each thing they forbid.
func TestWiringViolationsFound(t *testing.T) {
	src := "package p\n\nimport (\n\t\"sync\"\n\t\"sync/atomic\"\n)\n\nfunc f() {\n\tgo func() {}()\n" +
		strings.Repeat("\t_ = 1\n", maxFuncLines) + "}\n\nvar _ sync.Mutex\nvar _ atomic.Int64\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := wiringViolations(fset, f)
	want := []string{"imports sync", "imports sync/atomic", "func f is 123 lines", "go statement"}
	if len(got) != len(want) {
		t.Fatalf("violations %q, want %d: %q", got, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("violation %d: %q, want one saying %q", i, got[i], w)
		}
	}
}
