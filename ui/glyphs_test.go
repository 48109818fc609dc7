package ui

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/retrytop/retrytop/analysis"
)

// fontTables are the coverage tables of the five fonts every glyph must
// render in; each file says where its code points come from.
var fontTables = []string{"dejavu-sans-mono", "menlo", "consolas", "cascadia-code", "jetbrains-mono"}

// readCoverage reads a table of hexadecimal code points and ranges, one
// per line, after '#' comments.
func readCoverage(t *testing.T, name string) map[rune]bool {
	t.Helper()
	path := filepath.Join("testdata", "fonts", name+".txt")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	set := map[rune]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		ln := strings.TrimSpace(sc.Text())
		if ln == "" || strings.HasPrefix(ln, "#") {
			continue
		}
		lo, hi, isRange := strings.Cut(ln, "-")
		a, err1 := strconv.ParseUint(lo, 16, 32)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.ParseUint(hi, 16, 32)
		}
		if err1 != nil || err2 != nil || b < a {
			t.Fatalf("%s:%d: %q is not a code point or range", path, n, ln)
		}
		for c := a; c <= b; c++ {
			set[rune(c)] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(set) < 600 {
		t.Fatalf("%s: %d code points: not a font's table", path, len(set))
	}
	return set
}

// glyphStrings lists every string field of a glyph set (arrays and
// slices included), by reflection, so a glyph added later is checked
// without this test knowing its name.
func glyphStrings(v reflect.Value, out []string) []string {
	switch v.Kind() {
	case reflect.String:
		return append(out, v.String())
	case reflect.Array, reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			out = glyphStrings(v.Index(i), out)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			out = glyphStrings(v.Field(i), out)
		}
	}
	return out
}

// screensFor renders every view the dashboard has, at the golden sizes,
// in one charset: what the user can see.
func screensFor(t *testing.T, cs Charset) []string {
	var out []string
	view := func(m *Model) { out = append(out, ansi.Strip(m.View())) }
	for _, sz := range goldenSizes {
		m := storyModel(t, Options{Charset: cs}, sz.w, sz.h)
		view(m)
		for _, k := range []string{"enter", "tab", "esc", "?", "?", "f", "esc", "i", "esc", "space", "/"} {
			send(m, keyMsg(k))
			view(m)
		}
		s := svcModel(t, Options{Charset: cs}, sz.w, sz.h, nil)
		view(s)
		openService(t, s, "inventory")
		view(s)
		g := fleetModel(t, Options{Charset: cs}, sz.w, sz.h)
		view(g)
		send(g, keyMsg("enter"))
		view(g)
		r, _ := replayModel(t, cs, sz.w, sz.h)
		view(r)
		send(r, keyMsg("space"))
		view(r)
	}
	// The chain view alone, as View shows it (View folds the ASCII
	// charset's shared punctuation).
	for _, s := range []string{renderChains(t, cs, []analysis.ChainResult{chainFixture()}, 120, 20), renderChains(t, cs, nil, 80, 5)} {
		if cs == CharsetASCII {
			s = asciiFold.Replace(s)
		}
		out = append(out, s)
	}
	return out
}

// uiRunes is every non-ASCII character the UI can print in a charset:
// its glyph set, the chain boxes, the replay bar, the key labels, and
// every rendered screen.
func uiRunes(t *testing.T, cs Charset) map[rune]string {
	found := map[rune]string{}
	add := func(where, s string) {
		for _, r := range s {
			if r > 0x7e {
				if _, ok := found[r]; !ok {
					found[r] = where
				}
			}
		}
	}
	g := glyphsFor(cs)
	for _, s := range glyphStrings(reflect.ValueOf(*g), nil) {
		add("glyph set", s)
	}
	box := unicodeBox
	if cs == CharsetASCII {
		box = asciiBox
	}
	for _, s := range glyphStrings(reflect.ValueOf(box), nil) {
		add("chain boxes", s)
	}
	for lvl := uint8(0); lvl <= 3; lvl++ {
		add("replay bar", spikeGlyph(lvl, cs == CharsetASCII))
	}
	add("replay bar", barEdge(cs == CharsetASCII, true)+barEdge(cs == CharsetASCII, false))
	if cs != CharsetASCII {
		// The key labels and the help's separators (the screens below
		// show what the ASCII charset folds them to).
		km := DefaultKeyMap()
		for _, b := range glyphStrings(reflect.ValueOf(km), nil) {
			add("key map", b)
		}
		for _, b := range append(km.FullHelp(), km.ReplayHelp(true)...) {
			for _, k := range b {
				add("key map", k.Help().Key+k.Help().Desc)
			}
		}
	}
	for i, s := range screensFor(t, cs) {
		add("screen "+strconv.Itoa(i), s)
	}
	return found
}

// Every glyph the UI can print, in every charset, is in each of the five
// fonts' coverage tables (⧗ showed as a box in DejaVu Sans Mono).
func TestGlyphsInEveryFont(t *testing.T) {
	fonts := make([]map[rune]bool, len(fontTables))
	for i, name := range fontTables {
		fonts[i] = readCoverage(t, name)
	}
	for _, cs := range []Charset{CharsetBlock, CharsetBraille, CharsetASCII} {
		runes := uiRunes(t, cs)
		if cs != CharsetASCII && len(runes) < 20 {
			t.Errorf("%v: only %d glyphs found: the screens did not render", cs, len(runes))
		}
		keys := make([]rune, 0, len(runes))
		for r := range runes {
			keys = append(keys, r)
		}
		slices.Sort(keys)
		for _, r := range keys {
			for i, f := range fonts {
				if !f[r] {
					t.Errorf("%v: %q (U+%04X, from %s) is not in %s", cs, r, r, runes[r], fontTables[i])
				}
			}
		}
	}
}

// The ASCII charset prints ASCII only (LANG=C, --charset ascii): no ·
// or • from shared code.
func TestASCIICharsetPrintsASCII(t *testing.T) {
	runes := uiRunes(t, CharsetASCII)
	for r, where := range runes {
		t.Errorf("ascii charset prints %q (U+%04X) in %s", r, r, where)
	}
}

// The tables hold what their sources say: ⧗, once drawn as a box, is in
// none; the eighth blocks are in the three fonts read
// from their files and not claimed for the two proprietary ones.
func TestFontTablesAgreeWithTheirSources(t *testing.T) {
	for _, name := range fontTables {
		f := readCoverage(t, name)
		if f['⧗'] {
			t.Errorf("%s claims U+29D7 ⧗", name)
		}
		if !f['█'] || !f['─'] || !f['→'] {
			t.Errorf("%s lacks █ ─ →, which every one of the five has", name)
		}
		eighth := f['▁']
		if proprietary := name == "menlo" || name == "consolas"; eighth == proprietary {
			t.Errorf("%s: ▁ claimed %v", name, eighth)
		}
	}
}
