// Command fleetgen serves a fleet of Envoy-shaped targets for
// scripts/rss-fleet.sh: /metrics/N is target N's body of at least -series
// flat series (internal/expotest's generator), its counters one step
// further at every request to it. It prints its address and serves until
// killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/retrytop/retrytop/internal/expotest"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:0", "address to listen on")
	series := flag.Int("series", 2000, "flat series per target (at least)")
	flag.Parse()
	var mu sync.Mutex
	steps := map[string]int{}
	http.HandleFunc("/metrics/", func(w http.ResponseWriter, r *http.Request) {
		n := strings.TrimPrefix(r.URL.Path, "/metrics/")
		if _, err := strconv.Atoi(n); err != nil {
			http.NotFound(w, r)
			return
		}
		// Each scraper of a target sees its own counters grow: the key is
		// the target and the scraper's User-Agent.
		key := n + "|" + r.UserAgent()
		mu.Lock()
		step := steps[key]
		steps[key] = step + 1
		mu.Unlock()
		body, _ := expotest.EnvoyAt(*series, step)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(body)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	log.Fatal(http.Serve(ln, nil))
}
