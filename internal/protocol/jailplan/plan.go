package jailplan

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Bounds of a plan, checked by Validate: a setup is a few hundred steps,
// and its largest buffers are the session's files.
const (
	MaxSteps     = 4096
	MaxBufs      = 4096
	MaxBufBytes  = 256 << 20 // all buffers together
	maxArgs      = 6
	pointerBytes = 8 // the 64-bit platforms the jail runs on
)

// Plan is a setup: Steps run in order, each one system call; Bufs are the
// memory the steps' arguments point to.
type Plan struct {
	Bufs  []Buf  `json:"bufs,omitempty"`
	Steps []Step `json:"steps"`
}

// Buf is a buffer of the plan's memory. Ptrs are places in Data that
// hold the address of another buffer (a structure that points to a
// second one, such as seccomp's sock_fprog), filled in when the plan runs.
type Buf struct {
	Data []byte `json:"data"`
	Ptrs []Ptr  `json:"ptrs,omitempty"`
}

// Ptr is the address of buffer Buf, stored at byte Off of its buffer.
type Ptr struct {
	Off int `json:"off"`
	Buf int `json:"buf"`
}

// Step is one system call.
type Step struct {
	// Op says what the step does, in the words of a setup error
	// ("mount /proc"): a failure reports it with the errno.
	Op string `json:"op"`
	NR int64  `json:"nr"`
	// Args are at most six arguments.
	Args []Arg `json:"args,omitempty"`
	// Allow are errnos that count as success (EINVAL from dropping a
	// capability the kernel does not have); the step's result is then
	// minus the errno.
	Allow []int `json:"allow,omitempty"`
	// Want, when set, is the only successful result (a write's length, a
	// seccomp TSYNC's 0).
	Want *int64 `json:"want,omitempty"`
	// Report names the result in what the plan returns.
	Report string `json:"report,omitempty"`
	// AllThreads asks a multi-threaded interpreter (Go's) to make the
	// call on every thread: the state it sets is per thread.
	AllThreads bool `json:"all_threads,omitempty"`
}

// Arg is a step's argument: an integer, the address of a buffer, or the
// result of an earlier step (a descriptor it opened).
type Arg struct {
	kind argKind
	v    int64
}

type argKind uint8

const (
	argInt argKind = iota
	argBuf
	argResult
)

// Int is the argument v. Values above the int64 range (RLIM_INFINITY)
// keep their bits.
func Int[T ~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64 | ~uintptr](v T) Arg {
	return Arg{kind: argInt, v: int64(v)}
}

// Result is the result of step i, which must come before the step that
// uses it.
func Result(i int) Arg { return Arg{kind: argResult, v: int64(i)} }

type argJSON struct {
	I *int64 `json:"i,omitempty"`
	B *int64 `json:"b,omitempty"`
	R *int64 `json:"r,omitempty"`
}

// MarshalJSON writes {"i":v}, {"b":buffer} or {"r":step}.
func (a Arg) MarshalJSON() ([]byte, error) {
	v := a.v
	switch a.kind {
	case argBuf:
		return json.Marshal(argJSON{B: &v})
	case argResult:
		return json.Marshal(argJSON{R: &v})
	}
	return json.Marshal(argJSON{I: &v})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Arg) UnmarshalJSON(b []byte) error {
	var j argJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	n := 0
	for _, p := range []*int64{j.I, j.B, j.R} {
		if p != nil {
			n++
		}
	}
	switch {
	case n != 1:
		return fmt.Errorf("jailplan: an argument is one of i, b or r, not %s", b)
	case j.I != nil:
		*a = Arg{kind: argInt, v: *j.I}
	case j.B != nil:
		*a = Arg{kind: argBuf, v: *j.B}
	default:
		*a = Arg{kind: argResult, v: *j.R}
	}
	return nil
}

// Validate reports the first thing in p that an interpreter could not run:
// too many steps, buffers or bytes, a step without an Op, more than six
// arguments, an argument that names a missing buffer or a step that has not
// run yet, or a pointer outside its buffer or not aligned.
func (p *Plan) Validate() error {
	if len(p.Steps) > MaxSteps {
		return fmt.Errorf("jailplan: %d steps; at most %d", len(p.Steps), MaxSteps)
	}
	if len(p.Bufs) > MaxBufs {
		return fmt.Errorf("jailplan: %d buffers; at most %d", len(p.Bufs), MaxBufs)
	}
	total := 0
	for i, b := range p.Bufs {
		total += len(b.Data)
		if total > MaxBufBytes {
			return fmt.Errorf("jailplan: buffers of more than %d bytes", MaxBufBytes)
		}
		for _, ptr := range b.Ptrs {
			if ptr.Off < 0 || ptr.Off%pointerBytes != 0 || ptr.Off+pointerBytes > len(b.Data) {
				return fmt.Errorf("jailplan: buffer %d: a pointer at byte %d of %d (pointers are aligned and inside their buffer)", i, ptr.Off, len(b.Data))
			}
			if ptr.Buf < 0 || ptr.Buf >= len(p.Bufs) {
				return fmt.Errorf("jailplan: buffer %d: a pointer to buffer %d of %d", i, ptr.Buf, len(p.Bufs))
			}
		}
	}
	for i, s := range p.Steps {
		if s.Op == "" {
			return fmt.Errorf("jailplan: step %d has no Op", i)
		}
		if s.NR < 0 {
			return fmt.Errorf("jailplan: step %d (%s): system call number %d", i, s.Op, s.NR)
		}
		if len(s.Args) > maxArgs {
			return fmt.Errorf("jailplan: step %d (%s): %d arguments; at most %d", i, s.Op, len(s.Args), maxArgs)
		}
		for _, a := range s.Args {
			switch {
			case a.kind == argBuf && (a.v < 0 || a.v >= int64(len(p.Bufs))):
				return fmt.Errorf("jailplan: step %d (%s): buffer %d of %d", i, s.Op, a.v, len(p.Bufs))
			case a.kind == argResult && (a.v < 0 || a.v >= int64(i)):
				return fmt.Errorf("jailplan: step %d (%s): the result of step %d, which does not run before it", i, s.Op, a.v)
			case a.kind > argResult:
				return fmt.Errorf("jailplan: step %d (%s): an argument of unknown kind", i, s.Op)
			}
		}
	}
	return nil
}

// Error is a step that failed: its Op, and the errno it returned (0 when
// it returned something other than Want).
type Error struct {
	Op    string
	Errno int
	Msg   string
}

func (e *Error) Error() string { return e.Op + ": " + e.Msg }

// ErrInvalid marks a plan that Validate refused, as Run reports it.
var ErrInvalid = errors.New("jailplan: invalid plan")
