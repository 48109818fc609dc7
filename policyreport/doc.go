// Package policyreport runs and prints `retrytop policy check`: a chain
// of retry policies (the --policy language of package policy), checked
// by policy.CheckChain against the provider's failure fraction, written
// as text with a small terminal plot, markdown or JSON
// (docs/whatif.md, "Checking a policy before an incident").
package policyreport
