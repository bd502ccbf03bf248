package docker

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/both/syscallpolicy"
)

// TestSeccompProfileStatesThePolicy reads the profile as an engine does
// and holds it to internal/both/syscallpolicy, the jail's rules.
func TestSeccompProfileStatesThePolicy(t *testing.T) {
	var p seccompProfile
	if err := json.Unmarshal(profileJSON(), &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ALLOW" || !slices.Equal(p.Architectures, []string{"SCMP_ARCH_X86_64"}) {
		t.Errorf("default %s, architectures %v: want calls allowed but the denied ones, x86_64 only", p.DefaultAction, p.Architectures)
	}
	refused := map[string]uint32{} // calls refused whatever their arguments
	cloneFlags := map[uint64]bool{}
	personality := false
	for _, r := range p.Syscalls {
		if r.Action != "SCMP_ACT_ERRNO" {
			t.Errorf("rule %v: action %s, want SCMP_ACT_ERRNO", r.Names, r.Action)
		}
		switch {
		case len(r.Args) == 0:
			for _, n := range r.Names {
				refused[n] = r.ErrnoRet
			}
		case slices.Equal(r.Names, []string{"clone"}) && len(r.Args) == 1 && r.Args[0].Op == "SCMP_CMP_MASKED_EQ" &&
			r.Args[0].Index == 0 && r.Args[0].Value == r.Args[0].ValueTwo && r.ErrnoRet == syscallpolicy.EPERM:
			cloneFlags[r.Args[0].Value] = true
		case slices.Equal(r.Names, []string{"personality"}) && len(r.Args) == 1 && r.Args[0].Op == "SCMP_CMP_NE" &&
			r.Args[0].Value == uint64(syscallpolicy.PersonalityLinux) && r.ErrnoRet == syscallpolicy.EPERM:
			personality = true
		default:
			t.Errorf("a rule the policy does not state: %+v", r)
		}
	}
	for _, s := range syscallpolicy.Denied {
		if refused[s.Name] != syscallpolicy.EPERM {
			t.Errorf("%s: refused with errno %d, want EPERM", s.Name, refused[s.Name])
		}
	}
	if refused["clone3"] != syscallpolicy.ENOSYS {
		t.Errorf("clone3: errno %d, want ENOSYS", refused["clone3"])
	}
	if len(refused) != len(syscallpolicy.Denied)+1 {
		t.Errorf("%d calls refused outright, want the %d denied ones and clone3", len(refused), len(syscallpolicy.Denied))
	}
	for _, f := range syscallpolicy.CloneNewFlags {
		if !cloneFlags[uint64(f)] {
			t.Errorf("clone with flag %#x is not refused", f)
		}
	}
	if len(cloneFlags) != len(syscallpolicy.CloneNewFlags) {
		t.Errorf("%d clone rules, want one per CLONE_NEW* flag (%d)", len(cloneFlags), len(syscallpolicy.CloneNewFlags))
	}
	if !personality {
		t.Error("personality with another persona than the default is not refused")
	}
}

// TestSeccompOption: Docker gets the profile itself; podman a file of it
// on its own machine, which is written once and read back as ours; a
// podman the backend reaches over the network is refused, saying why.
func TestSeccompOption(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	opt, err := seccompOption(false, "tcp://127.0.0.1:2375")
	if err != nil || opt != "seccomp="+string(profileJSON()) {
		t.Fatalf("Docker: %q, %v", opt, err)
	}
	opt, err = seccompOption(true, "unix:///run/podman.sock")
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(opt, "seccomp=")
	data, err := os.ReadFile(path)
	if err != nil || string(data) != string(profileJSON()) {
		t.Fatalf("podman's profile file %s: %v", path, err)
	}
	if again, err := seccompOption(true, "unix:///run/podman.sock"); err != nil || again != opt {
		t.Errorf("a second option %q (%v), want the same file %q", again, err, opt)
	}
	if got := seccompOf(path); got != seccompName {
		t.Errorf("seccompOf(the file) = %q, want %q", got, seccompName)
	}
	if got := seccompOf(string(profileJSON())); got != seccompName {
		t.Errorf("seccompOf(the profile) = %q, want %q", got, seccompName)
	}
	if err := os.WriteFile(path, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := seccompOf(path); got == seccompName {
		t.Error("a file of another content at the profile's path is read back as the sandbox's profile")
	}
	if got := seccompOf("unconfined"); got != "unconfined" {
		t.Errorf("seccompOf(unconfined) = %q", got)
	}
	_, err = seccompOption(true, "tcp://127.0.0.1:8888")
	if err == nil || !strings.Contains(err.Error(), "unix socket") {
		t.Errorf("podman over TCP: %v, want a refusal that names the unix socket", err)
	}
}

// TestContainerWithoutTheProfileRefused: a container the engine gave
// another seccomp profile fails the read-back, naming it.
func TestContainerWithoutTheProfileRefused(t *testing.T) {
	b := &Backend{cfg: Config{Image: "x", User: "1000:1000"}}
	want := b.want(nil)
	applied := want
	applied.Tmpfs = map[string]string{"/workspace": "", "/tmp": "", "/tools": ""}
	got := applied
	got.Seccomp = "default"
	err := want.check(got)
	if err == nil || !strings.Contains(err.Error(), "seccomp: asked codemode, applied default") {
		t.Errorf("check: %v, want the seccomp difference named", err)
	}
	if err := want.check(applied); err != nil {
		t.Errorf("check of what was asked: %v", err)
	}
}
