// Package collect scrapes Prometheus endpoints into model snapshots.
package collect

import (
	_ "github.com/klauspost/compress/gzip"
	_ "github.com/prometheus/common/config"
	_ "github.com/prometheus/common/expfmt"
)
