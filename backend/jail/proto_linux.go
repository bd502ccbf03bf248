//go:build linux && amd64

package jail

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"syscall"
)

// argv0 values by which the package's init hook recognises its own stages.
const (
	stageInit = "codemode-jail-init" // pid 1 of the jail: setup, privilege drop, reaper
	stageExec = "codemode-jail-exec" // payload launcher: applies RLIMIT_AS, then execs
)

// File descriptors of the init stage (exec.Cmd.ExtraFiles start at 3).
const (
	fdConfig    = 3 // read: initConfig as JSON, then EOF
	fdLifeline  = 4 // read: one "go" byte after cgroup placement; HUP when the host dies
	fdStatus    = 5 // write: one statusMsg as JSON, then close
	fdFirstPass = 6 // open_tree fds, then Spec.ExtraFiles
)

// treeMount is a host tree to bind read-only at Target.
type treeMount struct {
	Target string
	FD     int // detached tree cloned by the host (open_tree), or 0: clone Target in the jail
}

// initConfig is everything the init stage needs, sent over fdConfig.
type initConfig struct {
	Rootless   bool
	PayloadUID int // inside the jail
	PayloadGID int

	Trees          []treeMount
	WorkspaceBytes int64
	TmpBytes       int64
	Files          map[string][]byte
	FilesBytes     int64

	AddressSpace int64 // RLIMIT_AS for the payload, <0 = none
	Nproc        uint64
	Nofile       uint64
	Fsize        uint64
	CPU          uint64

	Args       []string
	Self       bool
	InProcess  string // run this registered stage in init itself
	Template   bool   // the payload is a template that forks sessions (zygote_linux.go)
	Env        []string
	Dir        string
	ExtraFirst int // first fd of Spec.ExtraFiles in the init stage
	ExtraCount int
}

// execConfig is what the payload launcher needs.
type execConfig struct {
	Path         string
	Args, Env    []string
	AddressSpace int64
}

// statusMsg is the init stage's one report to the host.
type statusMsg struct {
	Op    string       `json:",omitempty"` // failing step; empty on success
	Errno int          `json:",omitempty"`
	Msg   string       `json:",omitempty"`
	Enf   *Enforcement `json:",omitempty"`
}

func (m *statusMsg) err() error {
	if m.Op == "" {
		return nil
	}
	var err error = errors.New(m.Msg)
	if m.Errno != 0 {
		err = syscall.Errno(m.Errno)
	}
	return &SetupError{Op: m.Op, Err: err}
}

func failMsg(op string, err error) statusMsg {
	m := statusMsg{Op: op, Msg: err.Error()}
	var se *SetupError
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
	var se *SetupError
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
	return &SetupError{Op: op, Err: err}
}
