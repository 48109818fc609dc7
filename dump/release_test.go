package dump

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/retrytop/retrytop/expo"
	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/model"
)

// TestReleasedSnapshotsServeNextFrames: a snapshot given back (release)
// is what the target's next mapped frame is read into, its values the
// parse's; one still in use (shared by inUse) or never given back is left
// as it was.
func TestReleasedSnapshotsServeNextFrames(t *testing.T) {
	data := valDump(t, 2, 200, 50)
	ref := openBytes(t, data)
	d := newDumpRecording(openBytes(t, data), expo.ExpfmtParser{}, nil)
	type given struct {
		at    unsafe.Pointer
		slots *expo.SlotMap
	}
	spare := map[string]given{} // per target: the snapshot given back and taken
	var held []model.Family     // a snapshot never given back
	var heldCopy []model.Family
	refused := map[string]*model.Snapshot{}
	var kept unsafe.Pointer // a snapshot refused back: shared by what is in use
	reused, wantReused, refusedShared := 0, 0, 0
	for i := 0; i < d.Len(); i++ {
		mapped := d.mapped
		got, gerr := d.Snapshot(i)
		want, werr := refSnapshot(ref, i, nil)
		compareSnapshots(t, fmt.Sprintf("entry %d", i), got, want, gerr, werr)
		if gerr != nil {
			continue
		}
		at := expotest.SamplesAt(got.Families)
		if at == kept {
			t.Fatalf("entry %d is read into a snapshot that was not given back", i)
		}
		vs := d.vals[got.Target]
		if g, ok := spare[got.Target]; ok && d.mapped > mapped && vs != nil && vs.slots == g.slots {
			wantReused++
			if at == g.at {
				reused++
			}
		}
		delete(spare, got.Target)
		// A snapshot refused back is not the last one of its target any
		// longer: still not taken.
		if r := refused[got.Target]; r != nil {
			if d.release(r, nil) {
				t.Fatalf("entry %d: an earlier snapshot given back", i)
			}
			delete(refused, got.Target)
		}
		switch {
		case i == 61:
			held, heldCopy = got.Families, expotest.CloneFamilies(got.Families)
		case i%40 == 7: // in use by a transform that shares it
			inUse := got.Families[len(got.Families)-1:] // a family
			if i%80 == 47 {
				// a sample array (of a counter: no buckets), in a family of
				// the transform's
				for _, f := range got.Families {
					if f.Type == model.Counter && len(f.Samples) > 0 {
						inUse = []model.Family{{Name: "x", Samples: f.Samples[len(f.Samples)-1:]}}
						break
					}
				}
			}
			if d.release(got, &model.Snapshot{Families: inUse}) {
				t.Fatalf("entry %d: given back while in use", i)
			}
			kept, refused[got.Target] = at, got
			refusedShared++
		default:
			if d.release(got, nil) {
				spare[got.Target] = given{at: at, slots: vs.slots}
			}
		}
	}
	if diff := diffFamilies(held, heldCopy); diff != "" {
		t.Errorf("a snapshot never given back changed: %s", diff)
	}
	if wantReused < d.Len()/2 || reused != wantReused {
		t.Errorf("%d frames read into a snapshot given back, want %d (of %d entries, at least half)", reused, wantReused, d.Len())
	}
	if refusedShared == 0 {
		t.Error("no snapshot was refused back")
	}
}
