package main

import (
	"strings"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		want    string // in the error; "" for none
	}{
		{"v0.1.0", ""},
		{"v1.0.0", ""},
		{"v1.2.3-rc.1", ""},
		{"v0.0.1-releasetest-3f2a", ""},
		{"", "no version given"},
		{"0.1.0", "not a semantic version"},
		{"v0.1.0.4", "not a semantic version"},
		{"v1.2", "not written in full"},
		{"v1", "not written in full"},
		{"v1.2.3+build.5", "not written in full"},
		{"v2.0.0", "major version v2"},
		{"v3.1.0-rc.1", "path ends in /v3"},
	} {
		err := checkVersion(c.version)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("checkVersion(%q) = %v, want no error", c.version, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("checkVersion(%q) = %v, want an error containing %q", c.version, err, c.want)
		}
	}
}
