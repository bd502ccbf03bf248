// Package hostcap is how a test says that this host lacks something it
// needs: user namespaces for the namespace jail, /usr/bin/python3, the go
// command, git, the Go module proxy, a Docker engine, npm, inotify, a
// writable cgroup, /proc, a writable home directory. [Missing] skips the test, saying what is
// missing and how to provide it; where the run asks for every test to
// run, it fails the test instead, so that a machine that should run
// everything (CI) cannot pass by skipping.
//
// # Variables
//
//   - CODEMODE_REQUIRE_ALL=1: a missing capability of any kind fails the
//     test. .ci/run sets it.
//   - CODEMODE_REQUIRE_DOCKER=1: a missing Docker engine (or sandbox
//     image) fails the test; other missing capabilities still skip.
//
// Every skip for a missing capability goes through [Missing], so that these
// variables mean the same in every package. Skips for other reasons (-short,
// a helper test that only a parent test runs, a benchmark's setup) do not.
package hostcap
