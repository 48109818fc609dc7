package safetext

import (
	"encoding/json"
	"html"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerminal(t *testing.T) {
	tests := []struct {
		in, want string
		max      int
	}{
		{"plain text", "plain text", 0},
		{"", "", 0},
		{"ünïcödé ✓ 日本", "ünïcödé ✓ 日本", 0},
		{"line1\nline2\r\n\tend\v\f", "line1 line2   end  ", 0},
		{"red \x1b[31mtext\x1b[0m", `red \x1b[31mtext\x1b[0m`, 0},
		{"nul\x00bell\x07del\x7f", `nul\x00bell\x07del\x7f`, 0},
		{"c1 \u0085nel \u009bcsi", `c1  nel \x9bcsi`, 0},
		{"bidi \u202eevil\u202c \u2066x\u2069", `bidi \u202eevil\u202c \u2066x\u2069`, 0},
		{"sep\u2028para\u2029", "sep para ", 0},
		{"zero\u200bwidth\ufeff soft\u00adhyphen \u061c", `zero\u200bwidth\ufeff soft\u00adhyphen \u061c`, 0},
		{"bad \xff\xfe utf8", "bad \uFFFD\uFFFD utf8", 0},
		{"abcdefghij", "abcdefghij", 10},
		{"abcdefghijk", "abcdefg…", 10},
		{"ab\x1bcdefghij", `ab\x1bc…`, 10},
		{"日本語日本語", "日本…", 10},
		{"abcdef", "ab", 2},
	}
	for _, tc := range tests {
		var got string
		if tc.max == 0 {
			got = Terminal(tc.in)
		} else {
			got = TerminalN(tc.in, tc.max)
		}
		if got != tc.want {
			t.Errorf("TerminalN(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestTerminalBounds(t *testing.T) {
	long := strings.Repeat("\x1b", 10000) + strings.Repeat("é", 10000)
	for _, max := range []int{1, 3, 4, 5, 100, MaxTextLen} {
		got := TerminalN(long, max)
		if len(got) > max || !utf8.ValidString(got) || strings.ContainsRune(got, 0x1b) {
			t.Errorf("TerminalN(long, %d) = %q (%d bytes)", max, got, len(got))
		}
	}
	if got := Terminal(strings.Repeat("a", 1000)); len(got) != MaxTextLen || !strings.HasSuffix(got, "…") {
		t.Errorf("Terminal(1000 a) has %d bytes", len(got))
	}
	if got := TerminalN(strings.Repeat("a", 1000), 0); len(got) != 1000 {
		t.Errorf("TerminalN(1000 a, 0) has %d bytes", len(got))
	}
}

func TestModes(t *testing.T) {
	const in = "<b>a&b</b> \"q\" 'x' |c| *d* _e_ [f](g) #h `i` \\ \x1b[2J \u202eevil\n"
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"HTML", HTML(in), `&lt;b&gt;a&amp;b&lt;/b&gt; &quot;q&quot; &#39;x&#39; |c| *d* _e_ [f](g) #h ` + "`i`" + ` \ \x1b[2J \u202eevil `},
		{"Markdown", Markdown(in), `&lt;b&gt;a&amp;b&lt;/b&gt; "q" 'x' \|c\| \*d\* \_e\_ \[f\](g) \#h 'i' \\ \\x1b\[2J \\u202eevil `},
		{"HTMLAttr", HTMLAttr("a<\u202e\x00\"b"), `a&lt;&#x202e;&#x0;&quot;b`},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"plain é"}`, `{"a":"plain é"}`},
		{"{\"a\":\"x\u009by\"}", `{"a":"x\u009by"}`},
		{"{\"a\":\"\u202eevil\u200b\"}", `{"a":"\u202eevil\u200b"}`},
		{"{\"a\":\"\u0085\u2066\ufeff\"}", `{"a":"\u0085\u2066\ufeff"}`},
	} {
		if got := string(JSON([]byte(c.in))); got != c.want {
			t.Errorf("JSON(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzSafeText checks every mode on any input: valid UTF-8 out; no control,
// C1 or hidden character in the text modes; HTML and markdown outputs carry
// no active character; HTMLAttr and JSON give back the exact input; the
// text modes are idempotent once applied (a second pass changes nothing but
// escaping's own characters).
func FuzzSafeText(f *testing.F) {
	f.Add("plain", 10)
	f.Add("\x1b[31m\xff\u202e<a href='x'>|*_[]#`&", 5)
	f.Add("\u0085\u2028\u00ad\ufeff\x7f\x9b", 0)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1<<16 || max < -1 {
			return
		}
		term := TerminalN(s, max)
		if max > 0 && len(term) > max {
			t.Fatalf("TerminalN(%q, %d) = %q: over the cap", s, max, term)
		}
		if TerminalN(term, 0) != term {
			t.Fatalf("TerminalN(%q) = %q is not stable", s, term)
		}
		for mode, out := range map[string]string{"terminal": term, "html": HTML(s), "markdown": Markdown(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q: invalid UTF-8", mode, s, out)
			}
			for _, r := range out {
				if r < 0x20 || (r >= 0x7f && r < 0xa0) || Invisible(r) {
					t.Fatalf("%s(%q) = %q keeps %U", mode, s, out, r)
				}
			}
		}
		for mode, out := range map[string]string{"html": HTML(s), "markdown": Markdown(s), "attr": HTMLAttr(s)} {
			if strings.ContainsAny(out, "<>") {
				t.Fatalf("%s(%q) = %q keeps a tag character", mode, s, out)
			}
		}
		if strings.ContainsAny(HTML(s), `"'`) || strings.ContainsAny(HTMLAttr(s), `"'`) {
			t.Fatalf("HTML(%q) keeps a quote", s)
		}
		// HTML reads &#x0; and the C1 references as other characters (as
		// browsers do): the round trip holds for text without them.
		if got := html.UnescapeString(HTMLAttr(s)); got != s && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r == 0 || (r >= 0x80 && r < 0xa0) }) {
			t.Fatalf("HTMLAttr(%q) reads back as %q", s, got)
		}
		if !utf8.ValidString(s) {
			return // encoding/json replaces invalid bytes itself
		}
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		esc := JSON(enc)
		var back string
		if err := json.Unmarshal(esc, &back); err != nil || back != s {
			t.Fatalf("JSON(%q) = %s reads back as %q (%v)", enc, esc, back, err)
		}
		for _, r := range string(esc) {
			if (r >= 0x80 && r < 0xa0) || Invisible(r) {
				t.Fatalf("JSON(%q) = %s keeps %U", enc, esc, r)
			}
		}
	})
}

func BenchmarkTerminal(b *testing.B) {
	for _, tc := range []struct{ name, s string }{
		{"clean", `target "api": GET http://10.0.0.1:9090/metrics: connection refused`},
		{"dirty", "target \"api\": line 3: invalid \x1b[31m name \xff\n" + strings.Repeat("x", 600)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Terminal(tc.s)
			}
		})
	}
}

// WriteJSON indents by two spaces, ends with a newline and escapes what
// JSON escapes.
func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	if err := WriteJSON(&b, map[string]string{"name": "a\u202eb"}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"name\": \"a\\u202eb\"\n}\n"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
}
