package sandboxserver

import _ "embed"

// runnerSource is the Python side of the worker. It is passed to the
// interpreter with -c, so nothing needs to be installed in the sandbox.
//
//go:embed runner/runner.py
var runnerSource string

// RunnerSource returns the source of the Python worker, for a backend that
// loads it into a template process once and forks workers from it (the
// template must not run it as __main__, which starts the worker).
func RunnerSource() string { return runnerSource }
