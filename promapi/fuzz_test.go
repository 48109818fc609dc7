package promapi

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode: any answer of a Prometheus API (or of whatever sits at its
// address) decodes into a result or an error, never a panic; a result's
// series have finite timestamps; an error's text carries no control
// character to the terminal.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(200, b)
		f.Add(422, b)
	}
	f.Add(502, []byte("<html>bad gateway\x1b[2J</html>"))
	f.Add(200, []byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1e300,"NaN"],["x",1]]}]}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		res, err := Decode(status, body)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\x1b\x07\x00\u202e") {
				t.Errorf("error text carries a control character: %q", err.Error())
			}
			return
		}
		for _, s := range res.Series {
			for _, p := range s.Points {
				if math.IsNaN(float64(p.T)) {
					t.Errorf("point without a time: %+v", p)
				}
			}
		}
		for _, w := range res.Warnings {
			if strings.ContainsAny(w, "\x1b\x07\x00\u202e") {
				t.Errorf("warning carries a control character: %q", w)
			}
		}
	})
}
