// Package discovery turns Prometheus service discovery into scrape
// targets: file_sd files (JSON or YAML target groups, re-read when they
// change) and the static and file_sd targets of a job in prometheus.yml,
// with the job's scheme, metrics_path, params, intervals and HTTP settings
// (docs/config.md, "Discovery").
//
// What it does not read (relabel_configs, other service discovery
// mechanisms) is reported as a warning naming the file and job, never
// dropped silently. Target names are the instance label (the address
// unless a group sets instance), sanitised for the screen.
package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v2"

	"github.com/retrytop/retrytop/config"
	"github.com/retrytop/retrytop/internal/safetext"
)

// MaxFileBytes bounds one file_sd file or prometheus.yml: 16 MiB holds
// well over 100,000 targets.
const MaxFileBytes = 16 << 20

// Group is one target group: addresses sharing labels, as in a file_sd
// file or a static_configs entry.
type Group struct {
	Targets []string
	Labels  map[string]string
	// Where says where the group was read, for messages: "FILE group N"
	// or "FILE line L" (sanitised).
	Where string
}

// fileGroup is a group as written in a file_sd file or static_configs.
type fileGroup struct {
	Targets []string          `yaml:"targets" json:"targets"`
	Labels  map[string]string `yaml:"labels" json:"labels"`
}

// ReadFileSD reads and parses one file_sd file.
func ReadFileSD(path string) ([]Group, error) {
	b, err := readCapped(path)
	if err != nil {
		return nil, err
	}
	return ParseFileSD(path, b)
}

// readCapped reads a file of at most MaxFileBytes. Errors name the file.
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", safetext.Terminal(path), unwrapPath(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", safetext.Terminal(path), unwrapPath(err))
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", safetext.Terminal(path), MaxFileBytes>>20)
	}
	return b, nil
}

// unwrapPath drops the path an *os.PathError repeats, as callers name it.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseFileSD parses file_sd content: a list of {targets: [...], labels:
// {...}} groups, as JSON when name ends in .json (or the content starts
// with '['), as YAML otherwise. Unknown keys are errors, as in
// Prometheus' YAML reader. Errors name the file and, where known, the
// line; name is used in messages only.
func ParseFileSD(name string, b []byte) ([]Group, error) {
	where := safetext.Terminal(name)
	var groups []Group
	var err error
	if isJSON(name, b) {
		groups, err = parseJSONGroups(where, b)
	} else {
		groups, err = parseYAMLGroups(where, b)
	}
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		if err := checkGroup(g); err != nil {
			return nil, fmt.Errorf("%s: %w", g.Where, err)
		}
	}
	return groups, nil
}

func isJSON(name string, b []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return true
	case ".yml", ".yaml":
		return false
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

func parseYAMLGroups(where string, b []byte) ([]Group, error) {
	var fgs []fileGroup
	if err := yaml.UnmarshalStrict(b, &fgs); err != nil {
		return nil, fmt.Errorf("%s: %s", where, yamlError(err, []fileGroup{}))
	}
	out := make([]Group, len(fgs))
	for i, fg := range fgs {
		out[i] = Group{Targets: fg.Targets, Labels: fg.Labels, Where: fmt.Sprintf("%s group %d", where, i+1)}
	}
	return out, nil
}

// yamlError shortens a yaml.v2 error, which names the line when the
// decoder knows it ("line 3: cannot unmarshal ..."), to one sanitised
// line.
func yamlError(err error, dst any) string { return config.YAMLMessage(err, dst) }

// parseJSONGroups decodes group by group, so that an error can name the
// line of the group it is in.
func parseJSONGroups(where string, b []byte) ([]Group, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	fail := func(off int64, err error) error {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off += te.Offset
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		return fmt.Errorf("%s: line %d: %s", where, lineAt(b, off), config.YAMLMessage(errors.New(msg), []fileGroup{}))
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fail(dec.InputOffset(), err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		if tok == nil { // null: no groups, as in Prometheus
			return nil, nil
		}
		return nil, fmt.Errorf("%s: line 1: want a list of target groups ([{\"targets\": [...], \"labels\": {...}}])", where)
	}
	var out []Group
	for dec.More() {
		start := dec.InputOffset()
		var fg fileGroup
		if err := dec.Decode(&fg); err != nil {
			return nil, fail(start, err)
		}
		line := lineAt(b, skipSpace(b, start))
		out = append(out, Group{Targets: fg.Targets, Labels: fg.Labels,
			Where: fmt.Sprintf("%s group %d (line %d)", where, len(out)+1, line)})
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, fail(dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: line %d: data after the list of target groups", where, lineAt(b, dec.InputOffset()))
	}
	return out, nil
}

// skipSpace skips JSON whitespace and the comma between values.
func skipSpace(b []byte, off int64) int64 {
	for off < int64(len(b)) && strings.IndexByte(" \t\r\n,", b[off]) >= 0 {
		off++
	}
	return off
}

// lineAt is the 1-based line of byte offset off in b.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte{'\n'}) + 1
}

// checkGroup applies Prometheus' rules to a group's labels: names not
// empty, names and values valid UTF-8.
func checkGroup(g Group) error {
	for k, v := range g.Labels {
		if k == "" || !utf8.ValidString(k) {
			return fmt.Errorf("invalid label name %q", safetext.Terminal(k))
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("label %q: value is not valid UTF-8", safetext.Terminal(k))
		}
	}
	return nil
}
