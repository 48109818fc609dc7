package replay

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Background is the work a replay does beside the dashboard: playing,
// the timeline bar's spikes and the seek index (read from the user cache
// directory when an earlier replay of the same recording, dialects and
// build wrote it, built otherwise; IndexWithCache). The cache's notes are
// kept to be said after the dashboard leaves the screen.
type Background struct {
	Player *Player
	// Path is the recording's file; NoCache builds the index every time.
	Path    string
	NoCache bool
	// KeyParts is what besides the recording decides its index.
	KeyParts func() []string

	mu    sync.Mutex
	notes []string
}

// Run plays, computes the spikes and indexes until ctx is done, and
// returns once all three have stopped.
func (b *Background) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { _ = b.Player.Run(ctx) })
	wg.Go(func() { _ = b.Player.ComputeSpikes(ctx) })
	wg.Go(func() { IndexWithCache(ctx, b.Player, b.Path, b.NoCache, b.KeyParts, b.note) })
	wg.Wait()
}

func (b *Background) note(s string) {
	b.mu.Lock()
	b.notes = append(b.notes, s)
	b.mu.Unlock()
}

// Notes are the notes of the seek index's cache so far.
func (b *Background) Notes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.notes)
}

// IndexBadge puts "indexing N %" before prev's badge while p's seek index
// is built (seeks past it load the lookback, slower), and says where it
// stopped when it gave up (its budget, half of --memory-limit).
func IndexBadge(p *Player, prev func() string) func() string {
	return func() string {
		b := ""
		switch done, total, stopped := p.IndexProgress(); {
		case stopped:
			b = fmt.Sprintf("index stopped at %d %%", 100*done/max(total, 1))
		case done < total:
			b = fmt.Sprintf("indexing %d %%", 100*done/max(total, 1))
		}
		if p := prev(); p != "" && b != "" {
			b += " " + p
		} else if p != "" {
			b = p
		}
		return b
	}
}
