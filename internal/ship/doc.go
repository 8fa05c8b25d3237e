// Package ship holds no code: its tests check what a release ships beside
// the binary (the licence, the GoReleaser configuration, the Makefile
// targets that build them), so that a broken release fails `go test`
// instead of a tag.
package ship
