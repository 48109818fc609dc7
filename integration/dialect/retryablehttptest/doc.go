// Package retryablehttptest holds the tested example of docs/dialects.md's
// recommended instrumentation of hashicorp/go-retryablehttp: its hooks
// counting retrytop's metric contract with client_golang, read by the
// native dialect. It lives in the integration module so that only that
// module requires go-retryablehttp; the package itself has no code.
package retryablehttptest
