package dump

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/retrytop/retrytop/model"
)

// A store holding no bodies (query results) recorded with StoreRecorder
// and read back reproduces every series at every time, gaps included.
func TestStoreRecorderRoundTrip(t *testing.T) {
	st := model.NewStore(model.StoreConfig{History: 50})
	t0 := time.Unix(1_700_000_000, 0)
	dep := func(d string) model.Labels { return model.LabelsFromPairs("dependency", d, "path", `a"b\c`) }
	snapAt := func(target string, i int) *model.Snapshot {
		v := float64(i)
		fams := []model.Family{
			{Name: model.MetricOriginals, Type: model.Counter, Samples: []model.Sample{{Labels: dep("db"), Value: 10 * v}}},
			{Name: model.MetricActiveCalls, Type: model.Gauge, Samples: []model.Sample{{Labels: dep("db"), Value: v}}},
			{Name: model.MetricPoolWait, Type: model.Histogram, Samples: []model.Sample{{Labels: dep("db"), Count: 3 * v, Sum: 0.5 * v,
				Buckets: []model.Bucket{{UpperBound: 0.1, Count: v}, {UpperBound: math.Inf(1), Count: 3 * v}}}}},
			{Name: "legacy_seconds", Type: model.Summary, Samples: []model.Sample{{Count: v, Sum: 2 * v,
				Quantiles: []model.QuantileValue{{Quantile: 0.99, Value: 0.25}}}}},
		}
		if i == 2 {
			fams = fams[:1] // a refresh where only originals came back
		}
		return &model.Snapshot{Target: target, Time: t0.Add(time.Duration(i) * time.Second), Families: fams}
	}
	path := filepath.Join(t.TempDir(), "q.rtd")
	w, err := Create(path, false, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewStoreRecorder(w)
	for i := 0; i < 3; i++ {
		st.Append(snapAt("checkout", i))
	}
	if n, err := rec.Sync(st); n != 3 || err != nil {
		t.Fatalf("first Sync wrote %d frames, %v; want 3", n, err)
	}
	for i := 3; i < 5; i++ {
		st.Append(snapAt("checkout", i))
		st.Append(snapAt("payments", i))
	}
	if n, err := rec.Sync(st); n != 4 || err != nil {
		t.Fatalf("second Sync wrote %d frames, %v; want 4 (2 new per target)", n, err)
	}
	if n, _ := rec.Sync(st); n != 0 {
		t.Errorf("a Sync with nothing new wrote %d frames", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := OpenRecording(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	back := model.NewStore(model.StoreConfig{History: 50})
	for i := 0; i < r.Len(); i++ {
		s, err := r.Snapshot(i)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		back.Append(s)
	}
	if r.Len() != 7 {
		t.Errorf("%d frames read back, want 7", r.Len())
	}
	for _, target := range st.Targets() {
		if !reflect.DeepEqual(back.Times(target), st.Times(target)) {
			t.Errorf("%s: times %v, want %v", target, back.Times(target), st.Times(target))
		}
		if !reflect.DeepEqual(back.Names(target), st.Names(target)) {
			t.Fatalf("%s: names %v, want %v", target, back.Names(target), st.Names(target))
		}
		for _, name := range st.Names(target) {
			want, got := st.Select(target, name, nil), back.Select(target, name, nil)
			if len(want) != len(got) {
				t.Fatalf("%s %s: %d series back, want %d", target, name, len(got), len(want))
			}
			for k := range want {
				if !want[k].Labels.Equal(got[k].Labels) || want[k].Type != got[k].Type || !reflect.DeepEqual(want[k].Points, got[k].Points) {
					t.Errorf("%s %s: got %+v\nwant %+v", target, name, got[k], want[k])
				}
			}
		}
	}
}
