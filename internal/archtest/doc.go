// Package archtest holds the tests that keep the module's shape what
// docs/architecture.md says it is: the package table's "imports of ours"
// column equals the packages' real imports, no package holds more than a
// fifth of the product's lines, and no function outside a table is longer
// than 120 lines.
package archtest
