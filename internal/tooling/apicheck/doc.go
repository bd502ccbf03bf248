// Package apicheck holds the test that keeps the public API of the
// repository's Go modules to the listing committed in api/: every exported
// identifier of every package a user can import, with its type or
// signature, one per line. A change to the public API shows up in that
// file's diff, so it is made on purpose (go test ./internal/tooling/apicheck
// -update rewrites the listing). The test also fails when an exported
// declaration mentions a type from an internal package, which a user
// could receive but never name.
package apicheck
