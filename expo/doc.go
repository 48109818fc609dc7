// Package expo parses Prometheus exposition formats into model families.
//
// Parsing sits behind the small Parser interface. ExpfmtParser reads the
// Prometheus text format with its own fast path (textparse.go) and falls
// back to prometheus/common/expfmt for everything else (OpenMetrics,
// protobuf, bodies the fast path declines), so both give the same
// families; a filter lets a caller materialise only the families it needs,
// and SelectBody cuts a body down to them before parsing. ParseValues and
// the value maps let a recording re-read a frame whose text kept its
// structure without parsing it again.
package expo
