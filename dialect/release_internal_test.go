package dialect

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

// TestReleasedTranslationsEqualFresh: an Envoy target's translations,
// each given back (Translator.Release) once compared, equal a translator
// that keeps nothing, over steady scrapes (where each translation is cut
// from the one given back before it) and churn; one never given back
// stays as it was.
func TestReleasedTranslationsEqualFresh(t *testing.T) {
	tr, err := NewTranslator(Config{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := &envoy{}
	fresh.g.clusters.off, fresh.g.slots.off = true, true
	present := make([]bool, 24)
	for i := range present {
		present[i] = i%3 != 2
	}
	rng := rand.New(rand.NewPCG(23, 4))
	const steady = 40 // scrapes before the churn starts
	var held *model.Snapshot
	var heldText string
	var last unsafe.Pointer
	for k := range 300 {
		if k >= steady {
			churn(k, present, rng)
		}
		snap := churnSnapshot(k, present, k < steady || k%100 < 70, sortedLabels)
		snap.Target = "envoy-1"
		got, _, err := tr.Translate(NameEnvoy, snap)
		if err != nil {
			t.Fatal(err)
		}
		want := fresh.Translate(snap)
		if g, w := fmt.Sprintf("%+v", got.Families), fmt.Sprintf("%+v", want.Families); g != w {
			t.Fatalf("scrape %d: translation differs\n got %s\nwant %s", k, g, w)
		}
		// The first translation learns the sizes and the second is cut
		// from a new array; from the third, while steady, each is cut
		// from the array given back before it (when it was).
		at := expotest.SamplesAt(got.Families)
		if k >= 2 && k < steady && last != nil && at != last {
			t.Fatalf("scrape %d: translated into new memory while steady, not the memory given back", k)
		}
		if k == steady/2 {
			held, heldText = got, fmt.Sprintf("%+v", got.Families)
			last = nil
			continue
		}
		last = at
		tr.Release(got)
	}
	if g := fmt.Sprintf("%+v", held.Families); g != heldText {
		t.Errorf("a translation never given back changed:\n got %s\nwant %s", g, heldText)
	}
}
