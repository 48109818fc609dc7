package archtest

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/retrytop/retrytop/"

// root is the module's directory, two levels up from this package.
var root = filepath.Join("..", "..")

// pkg is one product package: its path in the module and what it imports
// of ours, from its non-test files.
type pkg struct {
	path    string
	imports []string
	lines   int
	files   []*ast.File
}

// productPackages reads every package of the main module that ships in
// the binary or the library surface: everything but test-only helpers,
// testdata and the other modules (retry, integration, bench).
func productPackages(t *testing.T) (map[string]*pkg, *token.FileSet) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs := map[string]*pkg{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case strings.HasPrefix(d.Name(), "."), d.Name() == "testdata":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if isTestOnly(dir) {
			return nil
		}
		k := pkgs[dir]
		if k == nil {
			k = &pkg{path: dir}
			pkgs[dir] = k
		}
		k.files = append(k.files, f)
		k.lines += fset.Position(f.End()).Line
		for _, im := range f.Imports {
			ip := strings.Trim(im.Path.Value, `"`)
			if rest, ok := strings.CutPrefix(ip, module); ok && !slices.Contains(k.imports, rest) {
				k.imports = append(k.imports, rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range pkgs {
		sort.Strings(k.imports)
	}
	return pkgs, fset
}

// isTestOnly reports the packages only tests import.
func isTestOnly(dir string) bool {
	return dir == "internal/testpeer" || dir == "internal/expotest" || dir == "internal/archtest" || dir == "internal/testdump" || dir == "internal/simrec" ||
		dir == "internal/watchrig"
}

// docTable reads docs/architecture.md's package table: each row's package
// and the packages of ours it says it imports ("none" for none).
func docTable(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "| package |") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		var imports []string
		for _, c := range strings.Split(cells[len(cells)-1], ",") {
			c = strings.TrimSpace(c)
			if strings.HasPrefix(c, "`") {
				imports = append(imports, strings.Trim(strings.Fields(c)[0], "`"))
			}
		}
		sort.Strings(imports)
		rows[name] = imports
	}
	return rows
}

// TestArchitectureTableMatchesImports: every product package has a row in
// docs/architecture.md, every row names a package (or another module,
// marked "module"), and each row's "imports of ours" are the package's
// imports exactly.
func TestArchitectureTableMatchesImports(t *testing.T) {
	pkgs, _ := productPackages(t)
	doc := docTable(t)
	if len(doc) == 0 {
		t.Fatal("no package table in docs/architecture.md")
	}
	for path, k := range pkgs {
		want, ok := doc[path]
		if !ok {
			t.Errorf("package %s has no row in docs/architecture.md", path)
			continue
		}
		if !slices.Equal(want, k.imports) {
			t.Errorf("%s: docs/architecture.md says it imports %v; it imports %v", path, want, k.imports)
		}
	}
	for name := range doc {
		if _, ok := pkgs[name]; ok || isTestOnly(name) || otherModule(name) {
			continue
		}
		t.Errorf("docs/architecture.md has a row for %s, which is no product package", name)
	}
}

// otherModule reports the rows that describe the modules beside the
// product (they hold a go.mod of their own).
func otherModule(name string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(name), "go.mod"))
	return err == nil
}

// TestNoPackageHoldsAFifth: no product package has more than 20 % of the
// product's lines (non-test Go files).
func TestNoPackageHoldsAFifth(t *testing.T) {
	pkgs, _ := productPackages(t)
	total := 0
	for _, k := range pkgs {
		total += k.lines
	}
	for path, k := range pkgs {
		if share := float64(k.lines) / float64(total); share > 0.20 {
			t.Errorf("%s holds %d of %d lines (%.1f %%), more than 20 %%", path, k.lines, total, 100*share)
		}
	}
}

// maxFuncLines is the longest a function may be, tables aside.
const maxFuncLines = 120

// TestNoLongFunctions: no function of the product is longer than 120
// lines, unless most of its lines are composite literals (a table).
func TestNoLongFunctions(t *testing.T) {
	pkgs, fset := productPackages(t)
	for _, k := range pkgs {
		for _, f := range k.files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n <= maxFuncLines || tableLines(fset, fd.Body)*2 > n {
					continue
				}
				t.Errorf("%s: %s is %d lines, more than %d", fset.Position(fd.Pos()), fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}

// tableLines counts the lines of body inside composite literals of at
// least ten lines.
func tableLines(fset *token.FileSet, body *ast.BlockStmt) int {
	n := 0
	ast.Inspect(body, func(x ast.Node) bool {
		if cl, ok := x.(*ast.CompositeLit); ok {
			if l := fset.Position(cl.End()).Line - fset.Position(cl.Pos()).Line + 1; l >= 10 {
				n += l
				return false
			}
		}
		return true
	})
	return n
}

// docLayers reads the layer drawing after the package table: one layer a
// line, top first, its packages separated by " · " after the tree's
// marks; a name in parentheses is another module.
func docLayers(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "```\ncmd/retrytop")
	if start < 0 {
		t.Fatal("no layer drawing (a code block starting with cmd/retrytop) in docs/architecture.md")
	}
	block := s[start+4:]
	block = block[:strings.Index(block, "```")]
	layers := map[string]int{}
	lines := strings.Split(strings.TrimSpace(block), "\n")
	for i, line := range lines {
		line = strings.TrimLeft(line, " └─")
		if k := strings.Index(line, "   "); k >= 0 {
			line = line[:k] // the comment column
		}
		for _, name := range strings.Split(line, " · ") {
			name = strings.TrimSpace(name)
			if name == "" || strings.HasPrefix(name, "(") {
				continue
			}
			layers[name] = len(lines) - i // the bottom layer is 1
		}
	}
	return layers
}

// TestArchitectureLayers: every product package is in the drawing, and
// imports only packages of lower layers.
func TestArchitectureLayers(t *testing.T) {
	pkgs, _ := productPackages(t)
	layers := docLayers(t)
	for path, k := range pkgs {
		l, ok := layers[path]
		if !ok {
			t.Errorf("package %s is not in the layer drawing", path)
			continue
		}
		for _, im := range k.imports {
			if li, ok := layers[im]; !ok || li >= l {
				t.Errorf("%s (layer %d) imports %s (layer %d): arrows point down only", path, l, im, li)
			}
		}
	}
}
