package celltext

import (
	"strconv"

	"github.com/retrytop/retrytop/model"
)

// Bytes writes a size in the largest binary unit it reaches, to one
// decimal below ten: 900 bytes, 64 KiB, 1.5 MiB, 12 GiB.
func Bytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1<<10 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	v, u := float64(n)/(1<<10), 0
	for v >= 1<<10 && u < len(units)-1 {
		v, u = v/(1<<10), u+1
	}
	prec := 0
	if v < 10 && v != float64(int64(v)) {
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + units[u]
}

// MemoryCapText says what --memory-limit refused of a target's newest
// body: the series it held and what parsing them needed against the
// scrapes' budget.
func MemoryCapText(c *model.MemoryCap) string {
	return "parse of " + strconv.Itoa(c.ByMemory) + " series refused by --memory-limit: needs " +
		Bytes(c.Needed) + ", budget " + Bytes(c.Budget)
}
