// Package layering holds the package graph of the root and adkv1 modules to the order of the
// README's layout table: data flows one way, from the CLI and the plugin
// down to the contract, and no package imports one above it. It has no
// code, only the test that checks this, and one that holds the packages
// whose init functions take over a re-executed program (the jail's init
// stage, the supervisor) to dependencies that Go initializes early.
package layering
