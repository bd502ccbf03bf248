package docker

import (
	"strings"
	"testing"
)

// TestContainerWithoutTheEgressMountRefused: with egress, a container
// whose engine left out the proxy's directory, mounted it writable, or
// mounted anything else, fails the read-back, naming it.
func TestContainerWithoutTheEgressMountRefused(t *testing.T) {
	b := &Backend{cfg: Config{Image: "x", User: "1000:1000"}}
	eh := &egressHost{dir: "/tmp/codemode-egress-1"}
	want := b.want(eh)
	if len(want.Binds) != 1 || want.Binds[0] != "/tmp/codemode-egress-1:/run/codemode-egress:ro" {
		t.Fatalf("want.Binds = %v", want.Binds)
	}
	applied := want
	applied.Tmpfs = map[string]string{"/workspace": "", "/tmp": "", "/tools": ""}
	if err := want.check(applied); err != nil {
		t.Errorf("check of what was asked: %v", err)
	}
	for name, binds := range map[string][]string{
		"left out": nil,
		"writable": {"/tmp/codemode-egress-1:/run/codemode-egress:rw"},
		"another":  {"/tmp/codemode-egress-1:/run/codemode-egress:ro", "/:/host:ro"},
	} {
		got := applied
		got.Binds = binds
		if err := want.check(got); err == nil || !strings.Contains(err.Error(), "host directories mounted") {
			t.Errorf("%s: check: %v, want the mounts named", name, err)
		}
	}
	// Without egress, any host directory is refused.
	plain := b.want(nil)
	got := plain
	got.Tmpfs = applied.Tmpfs
	got.Binds = []string{"/tmp/x:/run/codemode-egress:ro"}
	if err := plain.check(got); err == nil {
		t.Error("a container without egress with a host directory mounted passed the read-back")
	}
}
