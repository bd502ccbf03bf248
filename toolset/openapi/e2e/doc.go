// Package e2e holds the end-to-end tests of package openapi: OpenAPI
// toolsets over loopback HTTP servers, called from Python in the jail
// through the Code Mode plugin. It has no API; it is a package of its own
// so that the openapi package's tests (and its fuzzing) do not link the
// plugin and ADK's runner.
package e2e
