package jailplan

// Builder appends steps and buffers to a plan.
type Builder struct {
	p Plan
}

// Plan is what b has built.
func (b *Builder) Plan() Plan { return b.p }

// Bytes is the address of a new buffer holding data; ptrs are places in
// it to fill with other buffers' addresses.
func (b *Builder) Bytes(data []byte, ptrs ...Ptr) Arg {
	b.p.Bufs = append(b.p.Bufs, Buf{Data: data, Ptrs: ptrs})
	return Arg{kind: argBuf, v: int64(len(b.p.Bufs) - 1)}
}

// Str is the address of s as a C string.
func (b *Builder) Str(s string) Arg { return b.Bytes(append([]byte(s), 0)) }

// BufIndex is the buffer a [Builder.Bytes] argument names, for a [Ptr].
func BufIndex(a Arg) int { return int(a.v) }

// Call appends the system call nr with args; op names it in errors. It
// returns the step, to set its options on, until the next Call.
func (b *Builder) Call(op string, nr uintptr, args ...Arg) *Step {
	b.p.Steps = append(b.p.Steps, Step{Op: op, NR: int64(nr), Args: args})
	return &b.p.Steps[len(b.p.Steps)-1]
}

// Last is the index of the step appended last, for [Result].
func (b *Builder) Last() int { return len(b.p.Steps) - 1 }

// Expect sets the only successful result of s.
func (s *Step) Expect(v int64) *Step { s.Want = &v; return s }

// Allowing adds errnos that count as success for s.
func (s *Step) Allowing(errnos ...int) *Step { s.Allow = append(s.Allow, errnos...); return s }

// Reporting names s's result in what the plan returns.
func (s *Step) Reporting(name string) *Step { s.Report = name; return s }

// OnAllThreads makes s a call on every thread of a Go interpreter.
func (s *Step) OnAllThreads() *Step { s.AllThreads = true; return s }
