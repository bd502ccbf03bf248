//go:build linux && amd64

package initstage

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/adk-codemode/codemode/internal/protocol/jailplan"
)

// argv0 values by which the package's init hook recognises its own stages.
const (
	StageInit = "codemode-jail-init" // pid 1 of the jail: setup, privilege drop, reaper
	StageExec = "codemode-jail-exec" // payload launcher: applies RLIMIT_AS, then execs
)

// File descriptors of the init stage (exec.Cmd.ExtraFiles start at 3).
const (
	FDConfig    = 3 // read: Config as JSON, then EOF
	FDLifeline  = 4 // read: one "go" byte after cgroup placement; HUP when the host dies
	FDStatus    = 5 // write: one Status as JSON, then close
	FDFirstPass = 6 // open_tree fds, then Spec.ExtraFiles
)

// PayloadID is the uid and gid the payload runs as inside the jail when the
// caller is root (backend/jail's PayloadID).
const PayloadID = 1000

// TreeMount is a host tree to bind read-only at Target.
type TreeMount struct {
	Target string
	FD     int // detached tree cloned by the host (open_tree), or 0: clone Target in the jail
}

// Config is everything the init stage needs, sent over FDConfig.
type Config struct {
	Rootless   bool
	PayloadUID int // inside the jail
	PayloadGID int

	Trees          []TreeMount
	WorkspaceBytes int64
	TmpBytes       int64
	Files          map[string][]byte
	FilesBytes     int64

	// Plan is the setup after the root is built (jailplan.Lock); RLIMIT_AS
	// is not in it: see runInProcess and limitSelfAS.
	Plan         jailplan.Plan
	AddressSpace int64 // RLIMIT_AS for the payload, <0 = none

	Args       []string
	Self       bool
	SelfFD     int    // with Self, an O_PATH descriptor of the host program in init
	InProcess  string // run this registered stage in init itself (see inProcess)
	Template   bool   // the payload is a template that forks sessions (backend/jail's zygote_linux.go)
	Env        []string
	ExtraFirst int // first fd of Spec.ExtraFiles in the init stage
	ExtraCount int
}

// execConfig is what the payload launcher needs.
type execConfig struct {
	Path         string
	Args, Env    []string
	AddressSpace int64
}

// Status is the init stage's one report to the host, and the payload
// launcher's to the init stage when it fails. What the setup achieved the
// host reads back from the kernel (backend/jail's readBack); Reports are
// the values only the jail can see, which its plan reported.
type Status struct {
	Op      string           `json:",omitempty"` // failing step; empty on success
	Errno   int              `json:",omitempty"`
	Msg     string           `json:",omitempty"`
	Reports map[string]int64 `json:",omitempty"`
}

// stepError is a setup step that failed; the host reports it as a
// backend/jail SetupError.
type stepError struct {
	Op  string
	Err error
}

func (e *stepError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *stepError) Unwrap() error { return e.Err }

// errUnsupported marks a kernel that lacks a system call the jail needs.
var errUnsupported = errors.New("Linux namespaces are unavailable on this host (needs Linux 5.12+)")

// err is the failure m reports, or nil.
func (m *Status) err() error {
	if m.Op == "" {
		return nil
	}
	var err error = errors.New(m.Msg)
	if m.Errno != 0 {
		err = syscall.Errno(m.Errno)
	}
	return &stepError{Op: m.Op, Err: err}
}

func failMsg(op string, err error) Status {
	var pe *jailplan.Error
	if errors.As(err, &pe) {
		return Status{Op: pe.Op, Errno: pe.Errno, Msg: pe.Msg}
	}
	m := Status{Op: op, Msg: err.Error()}
	var se *stepError
	if errors.As(err, &se) {
		m.Op, m.Msg = se.Op, se.Err.Error()
		err = se.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		m.Errno = int(errno)
	}
	if m.Msg == "" {
		m.Msg = "unknown error"
	}
	return m
}

func readJSON(f *os.File, v any) error {
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// stepErr wraps err as a setup failure of op.
func stepErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *stepError
	if errors.As(err, &se) {
		return err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	var sce *os.SyscallError
	if errors.As(err, &sce) {
		err = sce.Err
	}
	return &stepError{Op: op, Err: err}
}
