package scrape

import (
	"testing"

	"github.com/retrytop/retrytop/internal/expotest"
	"github.com/retrytop/retrytop/internal/safetext"
)

const (
	ctText     = expotest.CTText
	maxTextLen = safetext.MaxTextLen
)

var only = expotest.Only

func readFixture(t testing.TB, name string) []byte { t.Helper(); return expotest.Fixture(t, name) }
