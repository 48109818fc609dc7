// Package dashboard runs the terminal dashboard (ui.Run) with the work
// that feeds it: a scraper, a Prometheus API source, a replay player and
// its seek index, a recorder. Each feed runs beside the dashboard and
// stops when it ends; Run returns once every feed has.
package dashboard

import (
	"context"
	"sync"

	"github.com/retrytop/retrytop/ui"
)

// Run shows src with opts until the user quits or ctx is done, while
// every feed runs on a goroutine of its own with a context cancelled
// when the dashboard ends.
func Run(ctx context.Context, src ui.Source, opts ui.Options, feeds ...func(context.Context)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, feed := range feeds {
		wg.Go(func() { feed(ctx) })
	}
	err := ui.Run(ctx, src, opts)
	cancel()
	wg.Wait()
	return err
}
