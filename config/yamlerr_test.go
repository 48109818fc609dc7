package config

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v2"
)

// TestYAMLMessage: config errors name keys and lines in the
// file's words, never Go types, and suggest the key meant.
func TestYAMLMessage(t *testing.T) {
	decode := func(doc string) error {
		var c Config
		return yaml.UnmarshalStrict([]byte(doc), &c)
	}
	type group struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels"`
	}
	for _, c := range []struct {
		name string
		err  error
		want string
		dst  any // nil: a Config
	}{
		{"typo in a target", decode("targets:\n  - name: app\n    url: http://h/m\n    intreval: 5s\n"),
			"unknown key `intreval` at line 4; did you mean `interval`?", nil},
		{"typo far from any key", decode("targets:\n  - name: app\n    colour: red\n"), "unknown key `colour` at line 3", nil},
		{"bad duration", decode("targets:\n  - name: app\n    interval: 5x\n"), "line 3: `5x` is not a duration (30s, 1m)", nil},
		{"list for a mapping", decode("targets:\n  - [a, b]\n"), "line 2: a list is not what this key takes (a mapping of its own keys)", nil},
		{"two errors", decode("targets:\n  - name: app\n    intreval: 5s\n    tmeout: 1s\n"),
			"unknown key `intreval` at line 3; did you mean `interval`?; unknown key `tmeout` at line 4; did you mean `timeout`?", nil},
		{"json unknown field", errors.New(`unknown field "lables"`), "unknown key `lables`; did you mean `labels`?", []group{}},
		{"json type", errors.New("cannot unmarshal string into Go struct field fileGroup.targets of type []string"), "`targets` takes a list, not text", nil},
		{"json value", errors.New("cannot unmarshal number into Go value of type []main.fileGroup"), "expected a list, got a number", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil {
				t.Fatal("no error to rewrite")
			}
			dst := c.dst
			if dst == nil {
				dst = &Config{}
			}
			if got := YAMLMessage(c.err, dst); got != c.want {
				t.Errorf("got  %q\nwant %q\n(from %q)", got, c.want, c.err)
			}
		})
	}
}
