// Package archtest holds the checks that keep the module's shape what
// ARCHITECTURE.md says it is: the import layers (layers.go, stated as data),
// the size of files and functions (size.go, with an allow-list of reasons),
// and the Go names ARCHITECTURE.md cites (docnames.go). The checks run as
// ordinary Go tests, so `make test` (go test ./...) runs them.
package archtest
