package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/adk-codemode/codemode/internal/both/syscallpolicy"
)

// seccompName is what Enforcement.Seccomp says of a container that got the
// backend's own profile; "default" is the engine's.
const seccompName = "codemode"

// The seccomp profile in the format Docker and podman take (the OCI
// runtime's, with names).
type seccompProfile struct {
	DefaultAction string        `json:"defaultAction"`
	Architectures []string      `json:"architectures"`
	Syscalls      []seccompRule `json:"syscalls"`
}

type seccompRule struct {
	Names    []string     `json:"names"`
	Action   string       `json:"action"`
	ErrnoRet uint32       `json:"errnoRet"`
	Args     []seccompArg `json:"args,omitempty"`
}

type seccompArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// profileJSON is the jail's system-call policy (internal/both/syscallpolicy) as
// a seccomp profile: every call allowed but the denied ones (EPERM),
// clone3 (ENOSYS, so that libc uses clone), clone with any CLONE_NEW*
// flag, and personality with any persona but the default one. Only x86_64
// calls are allowed: the engine refuses the i386 and x32 entries of a
// profile that does not list them. Conditions on one argument within a
// rule are not combined with AND by every libseccomp, so each flag has a
// rule of its own; personality's query (0xffffffff), which the jail
// allows, is refused here with every other persona.
func profileJSON() []byte {
	p := seccompProfile{DefaultAction: "SCMP_ACT_ALLOW", Architectures: []string{"SCMP_ARCH_X86_64"}}
	denied := make([]string, len(syscallpolicy.Denied))
	for i, s := range syscallpolicy.Denied {
		denied[i] = s.Name
	}
	p.Syscalls = append(p.Syscalls,
		seccompRule{Names: denied, Action: "SCMP_ACT_ERRNO", ErrnoRet: syscallpolicy.EPERM},
		seccompRule{Names: []string{syscallpolicy.Clone3.Name}, Action: "SCMP_ACT_ERRNO", ErrnoRet: syscallpolicy.ENOSYS})
	for _, flag := range syscallpolicy.CloneNewFlags {
		p.Syscalls = append(p.Syscalls, seccompRule{
			Names: []string{syscallpolicy.Clone.Name}, Action: "SCMP_ACT_ERRNO", ErrnoRet: syscallpolicy.EPERM,
			Args: []seccompArg{{Index: 0, Value: uint64(flag), ValueTwo: uint64(flag), Op: "SCMP_CMP_MASKED_EQ"}},
		})
	}
	p.Syscalls = append(p.Syscalls, seccompRule{
		Names: []string{syscallpolicy.Personality.Name}, Action: "SCMP_ACT_ERRNO", ErrnoRet: syscallpolicy.EPERM,
		Args: []seccompArg{{Index: 0, Value: uint64(syscallpolicy.PersonalityLinux), Op: "SCMP_CMP_NE"}},
	})
	out, err := json.Marshal(p)
	if err != nil {
		panic(err) // a fixed structure of strings and numbers
	}
	return out
}

// seccompOption is the security option that gives a container the
// profile. Docker takes the profile itself; podman's service takes the
// path of a file it can read, so for podman the profile is written to a
// file named by its hash in the temporary directory, which only a service
// on this machine (a unix socket) can read.
func seccompOption(podman bool, host string) (string, error) {
	profile := profileJSON()
	if !podman {
		return "seccomp=" + string(profile), nil
	}
	if !strings.HasPrefix(host, "unix://") {
		return "", fmt.Errorf("docker: podman at %s takes a seccomp profile only as a file on its own machine, "+
			"and this backend sends the sandbox's own profile to every container: reach podman through its unix socket "+
			"(podman system service, DOCKER_HOST=unix:///run/podman.sock) on the machine that runs the sessions", host)
	}
	path, err := writeProfile(profile)
	if err != nil {
		return "", fmt.Errorf("docker: write the seccomp profile for podman: %w", err)
	}
	return "seccomp=" + path, nil
}

// writeProfile writes profile to a file named by its hash, once, and
// returns its path. The file is written under a temporary name and renamed,
// so a reader never sees half of it.
func writeProfile(profile []byte) (string, error) {
	sum := sha256.Sum256(profile)
	path := filepath.Join(os.TempDir(), "codemode-seccomp-"+hex.EncodeToString(sum[:8])+".json")
	if have, err := os.ReadFile(path); err == nil && string(have) == string(profile) {
		return path, nil
	}
	f, err := os.CreateTemp(os.TempDir(), "codemode-seccomp-*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(profile)
	cerr := f.Close()
	if err := firstError(werr, cerr, os.Chmod(f.Name(), 0o644)); err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return path, nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// seccompOf names the profile a container's security option gives it:
// seccompName for the backend's own (its profile, or the file the backend
// wrote), else the option's value as the engine reports it.
func seccompOf(value string) string {
	if value == string(profileJSON()) {
		return seccompName
	}
	if strings.HasPrefix(filepath.Base(value), "codemode-seccomp-") {
		if data, err := os.ReadFile(value); err == nil && string(data) == string(profileJSON()) {
			return seccompName
		}
	}
	return value
}
