package jail_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// TestConfigValidate: each value no jail can use is refused by Validate
// with the field's name, before anything starts; the zero Config and the
// documented negative AddressSpaceBytes pass.
func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  jail.Config
		want string // in the error; "" for none
	}{
		{"zero", jail.Config{}, ""},
		{"no address-space limit", jail.Config{AddressSpaceBytes: -1}, ""},
		{"negative memory", jail.Config{MemoryBytes: -1}, "Config.MemoryBytes is -1"},
		{"negative processes", jail.Config{Processes: -2}, "Config.Processes is -2"},
		{"negative payload id", jail.Config{PayloadHostID: -3}, "Config.PayloadHostID is -3"},
		{"host id too large", jail.Config{SetupHostID: 1 << 33}, "Config.SetupHostID"},
		{"equal host ids", jail.Config{SetupHostID: 5000, PayloadHostID: 5000}, "must differ"},
		{"payload id equal to the default setup id", jail.Config{PayloadHostID: jail.DefaultSetupHostID}, "must differ"},
		{"files key", jail.Config{Files: map[string][]byte{"../x": nil}}, "not a clean relative path"},
		{"extra path", jail.Config{ExtraReadOnly: []string{"relative"}}, "must be absolute"},
	} {
		err := c.cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want none", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	b := &jail.Backend{Config: jail.Config{Python: "/nonexistent/python3"}}
	if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "Config.Python") {
		t.Errorf("Backend.Validate with a missing interpreter: %v, want an error naming Config.Python", err)
	}
}

// TestLimitsTooSmallToStart: a memory or task limit too small for the
// Python worker and its supervisor fails the session's start with a
// *LimitError naming the field, on both start paths, rather than with the
// worker's dying words.
func TestLimitsTooSmallToStart(t *testing.T) {
	for _, c := range []struct {
		cfg   jail.Config
		field string
	}{
		{jail.Config{MemoryBytes: 4 << 20}, "MemoryBytes"},
		{jail.Config{Processes: 1}, "Processes"},
	} {
		for _, start := range startPaths {
			be := start.backend()
			be.Config = c.cfg
			s, err := be.Open(context.Background(), transport.SessionConfig{})
			_ = be.Close()
			if err == nil {
				s.Close()
				t.Errorf("%s/%s: a session started under %+v", c.field, start.name, c.cfg)
				continue
			}
			if errors.Is(err, jail.ErrUnsupported) {
				hostcap.Missing(t, hostcap.UserNS, err)
			}
			var le *jail.LimitError
			if !errors.As(err, &le) || le.Field != c.field || !strings.Contains(err.Error(), "Config."+c.field) {
				t.Errorf("%s/%s: %v, want a *jail.LimitError naming Config.%s", c.field, start.name, err, c.field)
			}
		}
	}
}
