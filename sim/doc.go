// Package sim reproduces the seed article's overload experiment on
// loopback: a provider stub with a few execution slots and a phase schedule
// (healthy -> slow -> recovered), an open-loop load generator, and a chain of
// retrying layers (browser -> app -> client -> provider), each a real HTTP
// server on 127.0.0.1 with its own Prometheus registry and /metrics.
//
// Every retrying hop goes through a retry.Owner from package retry; the sim
// counts originals, attempts and outcomes itself as well, independently of
// the metrics, so that the Truth it reports can be checked against what the
// /metrics endpoints say. docs/scenarios.md describes the scenarios and the
// metrics, docs/experiment.md one recorded run of Compare.
package sim
