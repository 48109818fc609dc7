package promapi

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/model"
)

func decodeFile(t *testing.T, status int, name string) (Result, error) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return Decode(status, b)
}

func TestDecodeVectorWithNaNAndInf(t *testing.T) {
	res, err := decodeFile(t, 200, "vector.json")
	if err != nil {
		t.Fatal(err)
	}
	if res.Type != "vector" || len(res.Series) != 4 {
		t.Fatalf("got %s with %d series", res.Type, len(res.Series))
	}
	s0 := res.Series[0]
	if !s0.Labels.Equal(model.LabelsFromPairs("job", "app", "dependency", "db", "priority", "critical")) {
		t.Errorf("labels %v", s0.Labels)
	}
	if len(s0.Points) != 1 || s0.Points[0] != (model.Point{T: 1700000000500, V: 12.5}) {
		t.Errorf("points %v", s0.Points)
	}
	if v := res.Series[1].Points[0].V; !math.IsNaN(v) {
		t.Errorf("NaN decoded as %v", v)
	}
	if v := res.Series[2].Points[0].V; !math.IsInf(v, 1) {
		t.Errorf("+Inf decoded as %v", v)
	}
	if v := res.Series[3].Points[0].V; !math.IsInf(v, -1) {
		t.Errorf("-Inf decoded as %v", v)
	}
}

func TestDecodeMatrixWithWarnings(t *testing.T) {
	res, err := decodeFile(t, 200, "matrix.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Point{{T: 1700000000000, V: 1}, {T: 1700000001000, V: 2}, {T: 1700000002250, V: 3.5}}
	if res.Type != "matrix" || len(res.Series) != 1 || len(res.Series[0].Points) != 3 {
		t.Fatalf("got %+v", res)
	}
	for i, p := range res.Series[0].Points {
		if p != want[i] {
			t.Errorf("point %d = %v, want %v", i, p, want[i])
		}
	}
	if len(res.Warnings) != 1 || strings.ContainsRune(res.Warnings[0], 0x1b) || !strings.Contains(res.Warnings[0], `\x1b[31m`) {
		t.Errorf("warnings not sanitised: %q", res.Warnings)
	}
}

func TestDecodeEmpty(t *testing.T) {
	res, err := decodeFile(t, 200, "empty.json")
	if err != nil || res.Type != "vector" || len(res.Series) != 0 || res.Series == nil {
		t.Errorf("got %+v, %v", res, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	_, err := decodeFile(t, 400, "error.json")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Type != "bad_data" || ae.Status != 400 {
		t.Fatalf("got %v", err)
	}
	if strings.ContainsAny(ae.Msg, "\x1b\x07") || !strings.Contains(ae.Msg, `parse error: unexpected "}"\x1b]0;pwned\x07`) {
		t.Errorf("message not verbatim or not sanitised: %q", ae.Msg)
	}
	_, err = decodeFile(t, 422, "toomany.json")
	if err == nil || err.Error() != "execution: query processing would load too many samples into memory in query execution" {
		t.Errorf("got %v", err)
	}
	// A proxy's error page is not the API's JSON.
	_, err = Decode(502, []byte("<html>Bad Gateway</html>\n"))
	if !errors.As(err, &ae) || ae.Error() != "HTTP 502: <html>Bad Gateway</html>" {
		t.Errorf("got %v", err)
	}
	if _, err := Decode(200, []byte("not json")); err == nil {
		t.Error("garbage with 200: no error")
	}
	if _, err := Decode(200, []byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}`)); err == nil {
		t.Error("bad value: no error")
	}
}

// BenchmarkDecodeMatrix: a query_range answer of 2,000 series x 60 points,
// the shape of a fleet backfill.
func BenchmarkDecodeMatrix(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := 0; i < 2000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"metric":{"job":"checkout","instance":"10.0.%d.%d:8080","dependency":"payments","le":"0.25"},"values":[`, i/250, i%250)
		for j := 0; j < 60; j++ {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `[%d.%03d,"%d.5"]`, 1700000000+j, i%1000, i*j)
		}
		sb.WriteString(`]}`)
	}
	sb.WriteString(`]}}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := Decode(200, body)
		if err != nil || len(res.Series) != 2000 || len(res.Series[1999].Points) != 60 {
			b.Fatalf("%v: %d series", err, len(res.Series))
		}
	}
}

// Points must be [time, "value"]; anything else is an error naming the
// sample, never a panic or a silent zero.
func TestDecodeBadPoints(t *testing.T) {
	for _, p := range []string{`[1,"x"]`, `[1]`, `[1,"2",3]`, `["1","2"]`, `[1,2]`, `{}`, `[]`, `null`, `[1, "1e999x"]`} {
		for _, typ := range []string{"vector", "matrix"} {
			body := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":` + p + `}]}}`
			if typ == "matrix" {
				body = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[` + p + `]}]}}`
			}
			if res, err := Decode(200, []byte(body)); err == nil {
				t.Errorf("%s point %s: no error, got %+v", typ, p, res.Series)
			}
		}
	}
	// Accepted shapes: blanks, exponents, the special values.
	body := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[ [ 1.7e9 , "NaN" ],[1700000000.5,"+Inf"],[1700000001,"-Inf"],[1700000002,"0.25"]]}]}}`
	res, err := Decode(200, []byte(body))
	if err != nil || len(res.Series) != 1 || len(res.Series[0].Points) != 4 {
		t.Fatalf("%v %+v", err, res)
	}
	pts := res.Series[0].Points
	if pts[0].T != 1700000000000 || !math.IsNaN(pts[0].V) || pts[1].T != 1700000000500 || !math.IsInf(pts[1].V, 1) ||
		!math.IsInf(pts[2].V, -1) || pts[3].V != 0.25 {
		t.Errorf("points %+v", pts)
	}
}
