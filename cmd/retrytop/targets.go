package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/retrytop/retrytop/discovery"
	"github.com/retrytop/retrytop/sources"
)

// sourceFlags are where targets and chains come from: arguments, a config
// file, --chain, file_sd files and jobs of a prometheus.yml.
type sourceFlags struct {
	config     string
	chains     []string
	fileSD     []string
	promConfig string
	jobs       []string
	otlp       sources.OTLPSpec
	// cmd tells whether --interval was given (it then wins over
	// prometheus.yml) and where warnings go.
	cmd *cobra.Command
}

func (f *sourceFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "config file with targets: and chains: (docs/config.md)")
	cmd.Flags().StringArrayVar(&f.chains, "chain", nil, "a chain as name=URL,name=URL,... from the user-facing layer down (repeatable)")
	cmd.Flags().StringArrayVar(&f.fileSD, "file-sd", nil, "Prometheus file_sd file (JSON or YAML target groups; a glob in the last path element is allowed), re-read when it changes (repeatable)")
	cmd.Flags().StringVar(&f.promConfig, "prometheus-config", "", "prometheus.yml whose --job targets (static_configs, file_sd_configs) to scrape, with the job's scheme, metrics_path, params and auth; its scrape_interval applies unless --interval is given")
	cmd.Flags().StringArrayVar(&f.jobs, "job", nil, "with --prometheus-config: a job_name whose targets to scrape (repeatable)")
	_ = cmd.MarkFlagFilename("file-sd", "json", "yml", "yaml")
	_ = cmd.MarkFlagFilename("prometheus-config", "yml", "yaml")
}

// registerOTLP adds --otlp: the verbs that scrape live targets (watch,
// record, analyze) take pushes.
func (f *sourceFlags) registerOTLP(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.otlp.Addr, "otlp", "", "also receive OpenTelemetry metric pushes (OTLP/HTTP) on HOST:PORT, e.g. 127.0.0.1:4318; each pushing resource is a target (docs/otlp.md)")
	cmd.Flags().StringVar(&f.otlp.TokenFile, "otlp-token-file", "", "with --otlp: a file holding the bearer token every push must carry (Authorization: Bearer TOKEN)")
	cmd.Flags().StringVar(&f.otlp.CertFile, "otlp-tls-cert-file", "", "with --otlp: receive pushes over TLS with this certificate (PEM; with --otlp-tls-key-file)")
	cmd.Flags().StringVar(&f.otlp.KeyFile, "otlp-tls-key-file", "", "with --otlp-tls-cert-file: its private key (PEM)")
	cmd.Flags().StringVar(&f.otlp.ClientCAFile, "otlp-tls-client-ca-file", "", "with --otlp-tls-cert-file: require a client certificate signed by these CAs (PEM): mutual TLS")
}

// discoveryPoll is how often discovery files are checked (tests shorten it).
var discoveryPoll = discovery.DefaultPoll

// spec is the flags as sources.Spec.
func (f *sourceFlags) spec() *sources.Spec {
	s := &sources.Spec{Config: f.config, Chains: f.chains, FileSD: f.fileSD, PromConfig: f.promConfig, Jobs: f.jobs,
		Memory: scrapeMemory(f.cmd), Poll: discoveryPoll, OTLP: f.otlp}
	if s.OTLP.Addr != "" {
		s.OTLP.MaxBytes = commandMemoryLimit(f.cmd) / 8 // the receiver's share (docs/otlp.md)
	}
	if f.cmd != nil {
		s.IntervalGiven = f.cmd.Flags().Changed("interval")
		s.Warn = f.cmd.ErrOrStderr()
	}
	return s
}

// given reports whether a flag names targets, so that retrytop with only
// flags and no TARGET is still watch.
func (f *sourceFlags) given() bool { return f.spec().Given() }

// resolve is sources.Spec.Resolve of the flags.
func (f *sourceFlags) resolve(args []string, interval time.Duration) (*sources.Sources, error) {
	return f.spec().Resolve(args, interval)
}

// forRecordings is sources.Spec.ForRecordings of the flags.
func (f *sourceFlags) forRecordings() (*sources.Recording, error) { return f.spec().ForRecordings() }

// derived is what the config file's custom mappings derive.
func (f *sourceFlags) derived() map[string]map[string]string { return f.spec().Derived() }
