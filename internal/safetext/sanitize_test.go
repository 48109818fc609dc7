package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/retrytop/retrytop/model"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		in, want string
		max      int
	}{
		{"plain text", "plain text", 0},
		{"", "", 0},
		{"ünïcödé ✓ 日本", "ünïcödé ✓ 日本", 0},
		{"line1\nline2\r\n\tend", "line1 line2   end", 0},
		{"red \x1b[31mtext\x1b[0m", `red \x1b[31mtext\x1b[0m`, 0},
		{"nul\x00bell\x07del\x7f", `nul\x00bell\x07del\x7f`, 0},
		{"c1 \u0085nel \u009bcsi", `c1  nel \x9bcsi`, 0},
		{"bidi \u202eevil\u202c \u2066x\u2069", `bidi \u202eevil\u202c \u2066x\u2069`, 0},
		{"sep\u2028para\u2029", "sep para ", 0},
		{"zero\u200bwidth\ufeff soft\u00adhyphen", `zero\u200bwidth\ufeff soft\u00adhyphen`, 0},
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
			got = Sanitize(tc.in)
		} else {
			got = SanitizeN(tc.in, tc.max)
		}
		if got != tc.want {
			t.Errorf("SanitizeN(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestSanitizeBounds(t *testing.T) {
	long := strings.Repeat("\x1b", 10000) + strings.Repeat("é", 10000)
	for _, max := range []int{1, 3, 4, 5, 100, MaxTextLen} {
		got := SanitizeN(long, max)
		if len(got) > max || !utf8.ValidString(got) || strings.ContainsRune(got, 0x1b) {
			t.Errorf("SanitizeN(long, %d) = %q (%d bytes)", max, got, len(got))
		}
	}
	if got := Sanitize(strings.Repeat("a", 1000)); len(got) != MaxTextLen || !strings.HasSuffix(got, "…") {
		t.Errorf("Sanitize(1000 a) has %d bytes", len(got))
	}
}

func FuzzSanitize(f *testing.F) {
	f.Add("plain", 10)
	f.Add("\x1b[31m\xff\u202e", 5)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1<<16 || max < -1 {
			return
		}
		got := SanitizeN(s, max)
		if !utf8.ValidString(got) || (max > 0 && len(got) > max) {
			t.Fatalf("SanitizeN(%q, %d) = %q", s, max, got)
		}
		for _, r := range got {
			if r < 0x20 || (r >= 0x7f && r < 0xa0) || model.InvisibleFormat(r) {
				t.Fatalf("SanitizeN(%q, %d) = %q keeps %U", s, max, got, r)
			}
		}
	})
}

func BenchmarkSanitize(b *testing.B) {
	for _, tc := range []struct{ name, s string }{
		{"clean", `target "api": GET http://10.0.0.1:9090/metrics: connection refused`},
		{"dirty", "target \"api\": line 3: invalid \x1b[31m name \xff\n" + strings.Repeat("x", 600)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Sanitize(tc.s)
			}
		})
	}
}
