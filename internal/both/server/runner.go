package server

import "github.com/adk-codemode/codemode/internal/sandbox/supervisor"

// RunnerSource returns the source of the Python worker, for a backend that
// loads it into a template process once and forks workers from it (the
// template must not run it as __main__, which starts the worker). The
// worker gets it with -c, so nothing needs to be installed in the sandbox.
func RunnerSource() string { return supervisor.RunnerSource() }
