// Package config reads retrytop's configuration file (docs/config.md):
// targets with their scrape settings, chains, custom dialect mappings and
// the dashboard's theme and keys. YAMLMessage turns the YAML decoder's
// errors into messages that name the file, the line and the known keys.
package config
