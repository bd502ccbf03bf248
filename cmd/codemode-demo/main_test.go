package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

func TestScriptedDemo(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", "")
	backend := "jail"
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	s, err := (&jail.Backend{}).Open(ctx, transport.SessionConfig{})
	cancel()
	switch {
	case errors.Is(err, jail.ErrUnsupported):
		hostcap.Without(t, hostcap.UserNS, "the unsandboxed backend", err)
		backend = "unsandboxed"
	case err != nil:
		t.Fatal(err)
	default:
		_ = s.Close()
	}
	var out bytes.Buffer
	if err := run(t.Context(), &out, "", backend, ""); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"replaying a scripted model",
		`↳ tool get_weather({"city":"Paris"}) → {"city":"Paris","conditions":"light rain","temp_c":18.5}`,
		`↳ tool convert_temperature({"unit":"F","value":23}) → {"unit":"F","value":73.4}`,
		"fetched 3 cities",
		"Lisbon   23.0 °C  73.4 °F  sunny",
		"warmest: Lisbon",
		"model: Lisbon is the warmest",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, out.String())
		}
	}
}
