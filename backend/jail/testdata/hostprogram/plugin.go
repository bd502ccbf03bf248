//go:build plugin

package main

import (
	_ "github.com/adk-codemode/codemode/plugin/codemode"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "google.golang.org/adk/v2/runner"
)
