package celltext

import (
	"testing"

	"github.com/retrytop/retrytop/model"
)

func TestMemoryCapText(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1023: "1023 bytes", 1 << 10: "1 KiB", 64 << 10: "64 KiB", 3 << 19: "1.5 MiB",
		512 << 20: "512 MiB", 12 << 30: "12 GiB", 5 << 40: "5 TiB", 2048 << 40: "2048 TiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
	c := model.MemoryCap{ByMemory: 120000, Needed: 1288490189, Budget: 256 << 20}
	if got, want := MemoryCapText(&c), "parse of 120000 series refused by --memory-limit: needs 1.2 GiB, budget 256 MiB"; got != want {
		t.Errorf("MemoryCapText = %q, want %q", got, want)
	}
}
