package dialect_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrytop/retrytop/dialect"
	"github.com/retrytop/retrytop/expo"
)

// fixtureOwners says which dialects' detectors must claim each fixture of
// testdata/: every other detector must not. A fixture missing here fails
// the test, so a new one must say whose it is.
var fixtureOwners = map[string][]string{
	"custom_acme.prom":                   nil, // a custom mapping's, no built-in dialect's
	"envoy.prom":                         {dialect.NameEnvoy},
	"envoy_retry_breaker.prom":           {dialect.NameEnvoy},
	"envoy_usedonly.prom":                {dialect.NameEnvoy},
	"istio_stats_off.prom":               {dialect.NameIstio},
	"istio_edge_reviews.prom":            {dialect.NameIstio},
	"traefik_entrypoints.prom":           {dialect.NameTraefik},
	"traefik_post.prom":                  {dialect.NameTraefik},
	"otel_http_post.prom":                {dialect.NameOTelHTTP},
	"resilience4j_breaker.prom":          {dialect.NameResilience4j},
	"polly_hedging.prom":                 {dialect.NamePolly},
	"polly_breaker.prom":                 {dialect.NamePolly},
	"aws_sdk_go_v2.prom":                 {dialect.NameAWSSDK},
	"grpc_a96_hedges.prom":               {dialect.NameGRPC},
	"envoy_track_remaining.prom":         {dialect.NameEnvoy},
	"envoy_summary.prom":                 {dialect.NameEnvoy},
	"envoy_tcp_proxy.prom":               {dialect.NameEnvoy},
	"service_envoy_inbound.1.prom":       {dialect.NameEnvoy},
	"service_envoy_inbound.2.prom":       {dialect.NameEnvoy},
	"istio_sidecar.prom":                 {dialect.NameIstio},
	"linkerd_policy.prom":                {dialect.NameLinkerd},
	"linkerd_legacy.prom":                {dialect.NameLinkerd},
	"linkerd_egress.prom":                {dialect.NameLinkerd},
	"linkerd1_1.7.prom":                  {dialect.NameLinkerd1},
	"haproxy_2.6.12.prom":                {dialect.NameHAProxy},
	"haproxy_2.3.10.prom":                {dialect.NameHAProxy},
	"service_haproxy_2.6.12.1.prom":      {dialect.NameHAProxy},
	"service_haproxy_2.6.12.2.prom":      {dialect.NameHAProxy},
	"grpc_go_otel.prom":                  {dialect.NameGRPC},
	"grpc_utf8.prom":                     {dialect.NameGRPC},
	"resilience4j_spring.prom":           {dialect.NameResilience4j, dialect.NamePools},
	"resilience4j_old.prom":              {dialect.NameResilience4j},
	"pools_hikari_native.prom":           {dialect.NamePools},
	"pools_gosql.prom":                   {dialect.NamePools, dialect.NameNative},
	"service_sim_provider.1.prom":        {dialect.NameNative},
	"service_sim_provider.2.prom":        {dialect.NameNative},
	"service_promhttp.1.prom":            nil, // read by analysis' service view as it is
	"service_promhttp.2.prom":            nil,
	"service_otel_http.1.prom":           nil,
	"service_otel_http.2.prom":           nil,
	"clientgo.prom":                      {dialect.NameClientGo},
	"traefik.prom":                       {dialect.NameTraefik},
	"traefik_inflight.1.prom":            {dialect.NameTraefik},
	"traefik_inflight.2.prom":            {dialect.NameTraefik},
	"grpc_middleware_v2.prom":            {dialect.NameGRPCPrometheus},
	"polly_v8.prom":                      {dialect.NamePolly},
	"kong_3.x.prom":                      {dialect.NameKong},
	"apisix_3.x.prom":                    {dialect.NameAPISIX},
	"otel_http_client.prom":              {dialect.NameOTelHTTP},
	"../../expo/testdata/histogram.prom": {dialect.NameNative},
	"resilience4j_malformed.prom":        nil, // never parses: see TestMalformed
}

// TestEveryFixtureToEveryDetector feeds every fixture of every dialect to
// every registered dialect's detector: each claims exactly the fixtures
// declared its own (no false positive, no miss).
func TestEveryFixtureToEveryDetector(t *testing.T) {
	files, err := filepath.Glob("testdata/*.prom")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for i := range files {
		files[i] = filepath.Base(files[i])
	}
	files = append(files, "../../expo/testdata/histogram.prom")
	for _, f := range files {
		owners, ok := fixtureOwners[f]
		if !ok {
			t.Errorf("%s: not in fixtureOwners; say which dialects it belongs to", f)
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		fams, err := expo.ExpfmtParser{}.Parse(f, b, "text/plain; version=0.0.4", nil)
		if strings.Contains(f, "malformed") {
			if err == nil {
				t.Errorf("%s parses", f)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, name := range dialect.Names() {
			d, err := dialect.New(name)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := d.Detect(fams), slices.Contains(owners, name); got != want {
				t.Errorf("%s.Detect(%s) = %v, want %v", name, f, got, want)
			}
			// Forced on any exposition (name=URL@dialect), a dialect
			// emits contract families only, each series with a
			// dependency, and nothing at all from what is not its own.
			s := d.Translate(snapOf(fams))
			if name != dialect.NameNative {
				contractOnly(t, s)
			}
			if !slices.Contains(owners, name) && !readsOthers(name, owners) {
				for _, fam := range s.Families {
					if !strings.HasPrefix(fam.Name, "sim_provider_") {
						t.Errorf("%s on %s (not its own) emits %s", name, f, fam.Name)
					}
				}
			}
		}
	}
	for f := range fixtureOwners {
		if !slices.Contains(files, f) {
			t.Errorf("fixtureOwners names %s, which is not a fixture", f)
		}
	}
}

// readsOthers reports whether dialect name reads, when forced, families of
// a fixture owned by others: istio reads Envoy's cluster stats (its
// sidecar's) and envoy those of an Istio sidecar; native passes the
// contract through and pools read any pool family beside another's.
func readsOthers(name string, owners []string) bool {
	switch name {
	case dialect.NameNative, dialect.NamePools:
		return true
	case dialect.NameIstio:
		return slices.Contains(owners, dialect.NameEnvoy)
	case dialect.NameEnvoy:
		return slices.Contains(owners, dialect.NameIstio)
	}
	return false
}
