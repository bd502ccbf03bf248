//go:build linux

package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/testsupport/fdcheck"
)

type decodeCase struct {
	name string
	ops  string // "host" or "sup": the op set the line is decoded with
	line string
	want *Msg // nil: the line must be rejected
}

func opSet(name string) map[string]int {
	if name == "host" {
		return HostOps
	}
	return SupervisorOps
}

var decodeCases = []decodeCase{
	// What the host sends.
	{"spawn", "host", `{"op":"spawn"}`, &Msg{Op: "spawn"}},
	{"interrupt", "host", `{"op":"interrupt","pid":42}`, &Msg{Op: "interrupt", Pid: 42}},
	{"settle", "host", `{"op":"settle","pid":42,"since":1234567890}`, &Msg{Op: "settle", Pid: 42, Since: 1234567890}},
	{"kill", "host", `{"op":"kill"}`, &Msg{Op: "kill"}},
	{"baseline", "host", `{"op":"baseline"}`, &Msg{Op: "baseline"}},
	{"changed", "host", `{"op":"changed"}`, &Msg{Op: "changed"}},
	{"read", "host", `{"op":"read","path":"a/b.txt","max":1024}`, &Msg{Op: "read", Path: "a/b.txt", Max: 1024}},
	{"kill with fds 0", "host", `{"op":"kill","fds":0}`, &Msg{Op: "kill"}},
	{"trailing white space", "host", "{\"op\":\"kill\"} \t\r", &Msg{Op: "kill"}},
	// What the supervisor sends.
	{"spawned", "sup", `{"op":"spawned","fds":4,"pid":7}`, &Msg{Op: "spawned", FDs: 4, Pid: 7}},
	{"exited", "sup", `{"op":"exited","pid":7,"status":768}`, &Msg{Op: "exited", Pid: 7, Status: 768}},
	{"settled", "sup", `{"op":"settled","count":32}`, &Msg{Op: "settled", Count: 32}},
	{"killed", "sup", `{"op":"killed"}`, &Msg{Op: "killed"}},
	{"files with inotify", "sup", `{"op":"files","fds":1,"watching":true}`, &Msg{Op: "files", FDs: 1, Watching: true}},
	{"files listed", "sup", `{"op":"files","files":[{"path":"a.txt","size":3},{"path":"d/e","size":0}],"watching":true}`,
		&Msg{Op: "files", Files: []FileInfo{{Path: "a.txt", Size: 3}, {Path: "d/e", Size: 0}}, Watching: true}},
	{"files none", "sup", `{"op":"files"}`, &Msg{Op: "files"}},
	{"file", "sup", `{"op":"file","path":"a.txt","data":"aGVsbG8="}`, &Msg{Op: "file", Path: "a.txt", Data: []byte("hello")}},
	{"file error", "sup", `{"op":"file","path":"a.txt","error":"no such file"}`, &Msg{Op: "file", Path: "a.txt", Error: "no such file"}},
	{"error", "sup", `{"op":"error","error":"fork: resource temporarily unavailable"}`, &Msg{Op: "error", Error: "fork: resource temporarily unavailable"}},

	// Unknown operations, and each side's operations sent by the other.
	{"unknown op", "host", `{"op":"format-disk"}`, nil},
	{"unknown op sup", "sup", `{"op":"format-disk"}`, nil},
	{"no op", "sup", `{"pid":1}`, nil},
	{"empty object", "host", `{}`, nil},
	{"host op from the supervisor", "sup", `{"op":"spawn"}`, nil},
	{"supervisor op from the host", "host", `{"op":"spawned","fds":4,"pid":1}`, nil},
	{"op not a string", "host", `{"op":1}`, nil},
	// Unknown fields.
	{"unknown field", "host", `{"op":"kill","signal":9}`, nil},
	{"unknown field sup", "sup", `{"op":"killed","pids":[1,2]}`, nil},
	{"unknown field in a file entry", "sup", `{"op":"files","files":[{"path":"a","size":1,"mode":420}]}`, nil},
	// Not exactly one object.
	{"trailing data", "host", `{"op":"kill"} x`, nil},
	{"trailing garbage bytes", "sup", "{\"op\":\"killed\"}\x00\x01", nil},
	{"two objects", "host", `{"op":"kill"}{"op":"kill"}`, nil},
	{"two objects with space", "sup", `{"op":"killed"} {"op":"killed"}`, nil},
	{"array", "host", `[{"op":"kill"}]`, nil},
	{"string", "host", `"kill"`, nil},
	{"number", "sup", `42`, nil},
	{"null", "sup", `null`, nil},
	{"empty line", "host", ``, nil},
	{"white space only", "host", `   `, nil},
	{"truncated", "sup", `{"op":"killed"`, nil},
	{"not json", "sup", `this is not json`, nil},
	// Descriptor counts.
	{"spawned with fds 3", "sup", `{"op":"spawned","fds":3,"pid":7}`, nil},
	{"spawned with fds 5", "sup", `{"op":"spawned","fds":5,"pid":7}`, nil},
	{"spawned with no fds", "sup", `{"op":"spawned","pid":7}`, nil},
	{"files with fds 2", "sup", `{"op":"files","fds":2,"watching":true}`, nil},
	{"killed with fds 1", "sup", `{"op":"killed","fds":1}`, nil},
	{"file with fds 1", "sup", `{"op":"file","fds":1,"path":"a"}`, nil},
	{"kill with fds 1", "host", `{"op":"kill","fds":1}`, nil},
	{"spawn with fds 4", "host", `{"op":"spawn","fds":4}`, nil},
	{"negative fds", "sup", `{"op":"files","fds":-1}`, nil},
	{"huge fds", "sup", `{"op":"spawned","fds":9223372036854775807,"pid":7}`, nil},
	{"fds overflows int", "sup", `{"op":"spawned","fds":92233720368547758070,"pid":7}`, nil},
	{"fds not an integer", "sup", `{"op":"files","fds":0.5}`, nil},
	// Negative numbers and bad file entries.
	{"negative pid", "host", `{"op":"interrupt","pid":-1}`, nil},
	{"negative pid sup", "sup", `{"op":"exited","pid":-1,"status":0}`, nil},
	{"negative spawned pid", "sup", `{"op":"spawned","fds":4,"pid":-7}`, nil},
	{"negative max", "host", `{"op":"read","path":"a","max":-1}`, nil},
	{"negative since", "host", `{"op":"settle","pid":42,"since":-1}`, nil},
	{"negative count", "sup", `{"op":"settled","count":-1}`, nil},
	{"negative file size", "sup", `{"op":"files","files":[{"path":"a.txt","size":-1}]}`, nil},
	{"empty file path", "sup", `{"op":"files","files":[{"path":"","size":1}]}`, nil},
	{"missing file path", "sup", `{"op":"files","files":[{"size":1}]}`, nil},
	{"bad file entry after a good one", "sup", `{"op":"files","files":[{"path":"a","size":1},{"path":"","size":0}]}`, nil},
	{"data not base64", "sup", `{"op":"file","path":"a","data":"!!!"}`, nil},
}

func TestDecodeMsg(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeMsg([]byte(tc.line), opSet(tc.ops))
			if tc.want == nil {
				if err == nil {
					t.Fatalf("decodeMsg(%q) = %+v, want an error", tc.line, got)
				}
				if !errors.Is(err, ErrProtocol) {
					t.Errorf("decodeMsg(%q): error %v does not wrap ErrProtocol", tc.line, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeMsg(%q): %v", tc.line, err)
			}
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("decodeMsg(%q) (-want +got):\n%s", tc.line, diff)
			}
		})
	}
	// Every operation of both sets is covered by a valid case.
	for name, ops := range map[string]map[string]int{"host": HostOps, "sup": SupervisorOps} {
		for op := range ops {
			found := false
			for _, tc := range decodeCases {
				if tc.ops == name && tc.want != nil && tc.want.Op == op {
					found = true
				}
			}
			if !found {
				t.Errorf("no valid %s case for op %q", name, op)
			}
		}
	}
}

func FuzzDecodeMsg(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.line), tc.ops == "host")
	}
	f.Fuzz(func(t *testing.T, line []byte, host bool) {
		ops := SupervisorOps
		if host {
			ops = HostOps
		}
		m, err := decodeMsg(line, ops)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		maxFDs, ok := ops[m.Op]
		if !ok {
			t.Fatalf("accepted op %q, which is not in the set", m.Op)
		}
		if m.FDs < 0 || m.FDs > maxFDs || (m.Op == "spawned" && m.FDs != 4) {
			t.Fatalf("accepted %s with %d descriptors", m.Op, m.FDs)
		}
		if m.Pid < 0 || m.Max < 0 {
			t.Fatalf("accepted a negative pid or max: %+v", m)
		}
		for _, fi := range m.Files {
			if fi.Path == "" || fi.Size < 0 {
				t.Fatalf("accepted a bad file entry %+v", fi)
			}
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal %+v: %v", m, err)
		}
		if bytes.IndexByte(again, '\n') >= 0 {
			t.Fatalf("the marshalled message has a newline: %q", again)
		}
		m2, err := decodeMsg(again, ops)
		if err != nil {
			t.Fatalf("the re-marshalled %q fails to decode: %v", again, err)
		}
		if diff := cmp.Diff(m, m2, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip of %q via %q (-first +second):\n%s", line, again, diff)
		}
	})
}

// --- supConn over a real socket pair ---------------------------------------

// socketPair returns the two ends of a non-blocking stream socket, as the
// host makes them for a supervisor.
func socketPair() (a, b *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "sandbox"), nil
}

// shut closes c and every descriptor it received that no message
// claimed, as its receiving goroutine does.
func shut(c *Conn) {
	c.DropFDs()
	_ = c.Close()
}

// supPair returns two supConns on a fresh socket pair: a sends what b's
// ops allow and b what a's allow.
func supPair(t testing.TB, aOps, bOps map[string]int) (a, b *Conn) {
	t.Helper()
	fa, fb, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	if a, err = NewConn(fa, aOps); err != nil {
		fb.Close()
		t.Fatal(err)
	}
	if b, err = NewConn(fb, bOps); err != nil {
		shut(a)
		t.Fatal(err)
	}
	return a, b
}

// rawPair returns a supConn and the raw socket of its peer, on which a
// test writes bytes and descriptors as a hostile peer would.
func rawPair(t testing.TB, ops map[string]int) (*Conn, *net.UnixConn) {
	t.Helper()
	fa, fb, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConn(fa, ops)
	if err != nil {
		fb.Close()
		t.Fatal(err)
	}
	fc, err := net.FileConn(fb)
	fb.Close()
	if err != nil {
		shut(c)
		t.Fatal(err)
	}
	return c, fc.(*net.UnixConn)
}

// pipes returns n pipes; every end is closed at the end of the test.
func pipes(t testing.TB, n int) (rs, ws []*os.File) {
	t.Helper()
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		rs, ws = append(rs, r), append(ws, w)
	}
	return rs, ws
}

// rawFDs dups the descriptors of files for a raw sendmsg; the caller
// closes them.
func rawFDs(t testing.TB, files ...*os.File) []int {
	t.Helper()
	var fds []int
	for _, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var dupErr error
		if err := rc.Control(func(fd uintptr) {
			var nfd int
			nfd, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
			fds = append(fds, nfd)
		}); err != nil || dupErr != nil {
			t.Fatal(err, dupErr)
		}
	}
	return fds
}

func isFIFO(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}

// TestConnPassesDescriptors sends a spawned message with the write ends
// of four pipes: exactly four descriptors arrive, each usable as the write
// end of its own pipe, in order.
func TestConnPassesDescriptors(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, sup := supPair(t, SupervisorOps, HostOps)
	defer shut(host)
	defer shut(sup)
	rs, ws := pipes(t, 4)
	defer func() {
		for i := range rs {
			rs[i].Close()
			ws[i].Close()
		}
	}()

	if err := sup.Send(Msg{Op: "spawned", Pid: 99}, ws...); err != nil {
		t.Fatal(err)
	}
	m, fds, err := host.Recv()
	if err != nil {
		t.Fatal(err)
	}
	defer CloseFDs(fds)
	if m.Op != "spawned" || m.Pid != 99 || m.FDs != 4 {
		t.Errorf("got %+v", m)
	}
	if len(fds) != 4 {
		t.Fatalf("got %d descriptors, want 4", len(fds))
	}
	if len(host.batches) != 0 {
		t.Errorf("%d batches of descriptors left queued", len(host.batches))
	}
	for i, fd := range fds {
		if !isFIFO(fd) {
			t.Errorf("descriptor %d is not a pipe", i)
			continue
		}
		msg := []byte{'p', byte('0' + i)}
		if _, err := unix.Write(fd, msg); err != nil {
			t.Errorf("write to descriptor %d: %v", i, err)
			continue
		}
		buf := make([]byte, 8)
		n, err := rs[i].Read(buf)
		if err != nil || string(buf[:n]) != string(msg) {
			t.Errorf("pipe %d: read %q, %v; want %q", i, buf[:n], err, msg)
		}
	}
	// The sender closed its duplicates: with the received ones closed,
	// the pipes' last write ends are ws.
	CloseFDs(fds)
	for i := range ws {
		ws[i].Close()
		buf := make([]byte, 1)
		if n, err := rs[i].Read(buf); n != 0 || err != io.EOF {
			t.Errorf("pipe %d: read %d, %v after closing its write ends; want EOF", i, n, err)
		}
	}
}

// TestConnDescriptorsFollowTheirMessage sends a message without
// descriptors and then one with, before the receiver reads: the kernel may
// hand both over in one read, and the descriptor must still go to the
// message that announced it.
func TestConnDescriptorsFollowTheirMessage(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, sup := supPair(t, SupervisorOps, HostOps)
	defer shut(host)
	defer shut(sup)
	rs, ws := pipes(t, 1)
	defer func() { rs[0].Close(); ws[0].Close() }()

	if err := sup.Send(Msg{Op: "exited", Pid: 5, Status: 256}); err != nil {
		t.Fatal(err)
	}
	if err := sup.Send(Msg{Op: "files", Watching: true}, ws[0]); err != nil {
		t.Fatal(err)
	}
	if err := sup.Send(Msg{Op: "killed"}); err != nil {
		t.Fatal(err)
	}
	m, fds, err := host.Recv()
	if err != nil || m.Op != "exited" || m.Pid != 5 || m.Status != 256 || len(fds) != 0 {
		CloseFDs(fds)
		t.Fatalf("first: %+v, %v, %v", m, fds, err)
	}
	m, fds, err = host.Recv()
	if err != nil || m.Op != "files" || !m.Watching || len(fds) != 1 {
		CloseFDs(fds)
		t.Fatalf("second: %+v, %v, %v", m, fds, err)
	}
	if _, err := unix.Write(fds[0], []byte("x")); err != nil {
		t.Error(err)
	}
	CloseFDs(fds)
	buf := make([]byte, 4)
	if n, err := rs[0].Read(buf); err != nil || string(buf[:n]) != "x" {
		t.Errorf("read %q, %v", buf[:n], err)
	}
	m, fds, err = host.Recv()
	if err != nil || m.Op != "killed" || len(fds) != 0 {
		CloseFDs(fds)
		t.Fatalf("third: %+v, %v, %v", m, fds, err)
	}
}

// TestConnLargeMessage sends messages of several MiB both ways, with a
// descriptor after them.
func TestConnLargeMessage(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, sup := supPair(t, SupervisorOps, HostOps)
	defer shut(host)
	defer shut(sup)
	rs, ws := pipes(t, 1)
	defer func() { rs[0].Close(); ws[0].Close() }()

	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	path := strings.Repeat("d/", 1000) + "f"
	sent := make(chan error, 1)
	go func() {
		// Larger than the socket buffer: this blocks until the host reads.
		err := sup.Send(Msg{Op: "file", Path: path, Data: data})
		if err == nil {
			err = sup.Send(Msg{Op: "files", Watching: true}, ws[0])
		}
		sent <- err
	}()
	m, fds, err := host.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if m.Op != "file" || m.Path != path || !bytes.Equal(m.Data, data) || len(fds) != 0 {
		t.Errorf("got op %q path of %d bytes, %d bytes of data (equal: %v), %d descriptors",
			m.Op, len(m.Path), len(m.Data), bytes.Equal(m.Data, data), len(fds))
	}
	m, fds, err = host.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if m.Op != "files" || len(fds) != 1 || !isFIFO(fds[0]) {
		t.Errorf("after the large message: %+v, %v", m, fds)
	}
	CloseFDs(fds)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}

	// And the other way, with a long list of files.
	files := make([]FileInfo, 20_000)
	for i := range files {
		files[i] = FileInfo{Path: strings.Repeat("x", 40) + string(rune('a'+i%26)), Size: int64(i)}
	}
	go func() { sent <- host.Send(Msg{Op: "read", Path: path, Max: 1 << 40}) }()
	m, fds, err = sup.Recv()
	if err != nil || m.Op != "read" || m.Path != path || m.Max != 1<<40 || len(fds) != 0 {
		t.Fatalf("read: %+v, %v, %v", m, fds, err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	go func() { sent <- sup.Send(Msg{Op: "files", Files: files}) }()
	m, _, err = host.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, m.Files); diff != "" {
		t.Errorf("files differ (-want +got):\n%.2000s", diff)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// TestConnUnannouncedDescriptors: descriptors that come with a message
// announcing none are not handed out with it and are closed once the
// stream has moved past them, so that they never pile up.
func TestConnUnannouncedDescriptors(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, raw := rawPair(t, SupervisorOps)
	defer shut(host)
	defer raw.Close()
	rs, ws := pipes(t, 1)
	defer func() { rs[0].Close(); ws[0].Close() }()

	sendRaw := func(line string, n int) {
		t.Helper()
		files := make([]*os.File, n)
		for i := range files {
			files[i] = ws[0]
		}
		fds := rawFDs(t, files...)
		defer CloseFDs(fds)
		if _, _, err := raw.WriteMsgUnix([]byte(line), syscall.UnixRights(fds...), nil); err != nil {
			t.Fatal(err)
		}
	}
	sent := 0
	for sent < 4*maxQueuedFDs {
		sendRaw(`{"op":"killed","fds":0}`+"\n", 8)
		sent += 8
		m, fds, err := host.Recv()
		if err != nil {
			t.Fatalf("after %d unannounced descriptors: %v", sent, err)
		}
		if m.Op != "killed" || len(fds) != 0 {
			CloseFDs(fds)
			t.Fatalf("got %+v with %d descriptors, want none", m, len(fds))
		}
	}
	if n := len(host.batches); n > 1 {
		t.Errorf("%d batches of unannounced descriptors kept, want at most the last", n)
	}
	// Every descriptor received is closed with the connection: the pipe's
	// only write end left is then ws[0].
	shut(host)
	ws[0].Close()
	buf := make([]byte, 1)
	if n, err := rs[0].Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read %d, %v; want EOF: a received descriptor is still open", n, err)
	}
}

// TestConnUnannouncedDescriptorsNotHandedOn: a descriptor that came
// with a message announcing none must not be handed to a later message
// that announces one, in place of the descriptor that came with it.
func TestConnUnannouncedDescriptorsNotHandedOn(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, raw := rawPair(t, SupervisorOps)
	defer shut(host)
	defer raw.Close()
	rs, ws := pipes(t, 2) // 0: sent unannounced; 1: sent with its message
	defer func() {
		for i := range rs {
			rs[i].Close()
			ws[i].Close()
		}
	}()
	sendRaw := func(line string, f *os.File) {
		t.Helper()
		fds := rawFDs(t, f)
		defer CloseFDs(fds)
		if _, _, err := raw.WriteMsgUnix([]byte(line+"\n"), syscall.UnixRights(fds...), nil); err != nil {
			t.Fatal(err)
		}
	}
	sendRaw(`{"op":"killed"}`, ws[0])
	if m, fds, err := host.Recv(); err != nil || m.Op != "killed" || len(fds) != 0 {
		CloseFDs(fds)
		t.Fatalf("killed: %+v, %v, %v", m, fds, err)
	}
	sendRaw(`{"op":"files","fds":1,"watching":true}`, ws[1])
	m, fds, err := host.Recv()
	defer CloseFDs(fds)
	if err != nil {
		// Refusing the connection is fine too.
		if !errors.Is(err, ErrProtocol) {
			t.Fatalf("files: %v", err)
		}
		return
	}
	if m.Op != "files" || len(fds) != 1 {
		t.Fatalf("files: %+v, %v", m, fds)
	}
	if _, err := unix.Write(fds[0], []byte("?")); err != nil {
		t.Fatal(err)
	}
	rs[0].SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _ := rs[0].Read(make([]byte, 1)); n == 1 {
		t.Error("descriptors that came with a message announcing none were handed to a later message")
	}
}

// TestConnTooManyDescriptorsAtOnce: a message with more descriptors
// than fit in the receive buffer fails; none leak.
func TestConnTooManyDescriptorsAtOnce(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, raw := rawPair(t, SupervisorOps)
	defer shut(host)
	defer raw.Close()
	rs, ws := pipes(t, 1)
	defer func() { rs[0].Close(); ws[0].Close() }()
	files := make([]*os.File, maxQueuedFDs+8)
	for i := range files {
		files[i] = ws[0]
	}
	fds := rawFDs(t, files...)
	_, _, err := raw.WriteMsgUnix([]byte(`{"op":"spawned","fds":4,"pid":1}`+"\n"), syscall.UnixRights(fds...), nil)
	CloseFDs(fds)
	if err != nil {
		t.Fatal(err)
	}
	m, got, err := host.Recv()
	CloseFDs(got)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %+v, %d descriptors, %v; want a protocol error", m, len(got), err)
	}
}

// TestConnMissingDescriptors: a message announcing descriptors that did
// not come with it fails.
func TestConnMissingDescriptors(t *testing.T) {
	for _, line := range []string{
		`{"op":"spawned","fds":4,"pid":1}`,
		`{"op":"files","fds":1,"watching":true}`,
	} {
		t.Run("", func(t *testing.T) {
			base := fdcheck.Baseline(t)
			defer fdcheck.Check(t, base)
			host, raw := rawPair(t, SupervisorOps)
			defer shut(host)
			defer raw.Close()
			if _, err := raw.Write([]byte(line + "\n")); err != nil {
				t.Fatal(err)
			}
			m, fds, err := host.Recv()
			CloseFDs(fds)
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("%s: got %+v, %d descriptors, %v; want a protocol error", line, m, len(fds), err)
			}
		})
	}

	// Fewer than announced: three of four.
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, raw := rawPair(t, SupervisorOps)
	defer shut(host)
	defer raw.Close()
	rs, ws := pipes(t, 1)
	defer func() { rs[0].Close(); ws[0].Close() }()
	fds := rawFDs(t, ws[0], ws[0], ws[0])
	_, _, err := raw.WriteMsgUnix([]byte(`{"op":"spawned","fds":4,"pid":1}`+"\n"), syscall.UnixRights(fds...), nil)
	CloseFDs(fds)
	if err != nil {
		t.Fatal(err)
	}
	m, got, err := host.Recv()
	CloseFDs(got)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("three of four: got %+v, %d descriptors, %v; want a protocol error", m, len(got), err)
	}
}

// TestConnBadLines: a line that does not decode fails the receive, and
// the end of the stream is io.EOF, also in the middle of a line.
func TestConnBadLines(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, raw := rawPair(t, SupervisorOps)
	defer shut(host)
	if _, err := raw.Write([]byte("{\"op\":\"killed\"}\nnot json\n{\"op\":\"killed\"}\n{\"op\":\"kil")); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if m, _, err := host.Recv(); err != nil || m.Op != "killed" {
		t.Fatalf("first: %+v, %v", m, err)
	}
	if m, _, err := host.Recv(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("garbage: %+v, %v; want a protocol error", m, err)
	}
	if m, _, err := host.Recv(); err != nil || m.Op != "killed" {
		t.Fatalf("after the garbage: %+v, %v", m, err)
	}
	if m, _, err := host.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %+v, %v; want io.EOF", m, err)
	}
}

// TestConnLineTooLong: a line longer than the bound fails the receive
// instead of growing the buffer without bound. The bound (64 MiB) is
// lowered here, so that the test sends megabytes rather than tens of them.
func TestConnLineTooLong(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	host, raw := rawPair(t, SupervisorOps)
	host.maxLine = 4 << 20
	defer shut(host)
	defer raw.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for sent := 0; sent <= host.maxLine+2<<20; sent += len(chunk) {
			select {
			case <-done:
				return
			default:
			}
			if _, err := raw.Write(chunk); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	m, _, err := host.Recv()
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %+v, %v; want a protocol error", m, err)
	}
	t.Logf("%s to reject a line over %d bytes: %v", time.Since(start), host.maxLine, err)
	raw.Close()
}

// setVar sets *v for the test and restores it after.
func setVar[T any](t *testing.T, v *T, val T) {
	old := *v
	*v = val
	t.Cleanup(func() { *v = old })
}

// within runs f and fails the test unless it returns within d; unstick,
// if set, then runs to let f return.
func within(t *testing.T, d time.Duration, what string, f func(), unstick func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("%s did not return within %s", what, d)
		if unstick != nil {
			unstick()
		}
		<-done
	}
}

// A send the peer does not take ends within the write timeout,
// and drops the connection.
func TestConnSendDeadline(t *testing.T) {
	setVar(t, &WriteTimeout, 300*time.Millisecond)
	c, peer := rawPair(t, SupervisorOps) // the peer never reads
	defer shut(c)
	defer peer.Close()
	big := strings.Repeat("p", 1<<20)
	var err error
	within(t, 10*time.Second, "sending to a peer that does not read", func() {
		for range 64 {
			if err = c.Send(Msg{Op: "read", Path: big}); err != nil {
				return
			}
		}
	}, func() { peer.Close(); c.Close() })
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("send: %v; want a deadline error", err)
	}
	if err := c.Send(Msg{Op: "kill"}); err == nil {
		t.Error("the connection is still usable after a send timed out")
	}
}

// Paths, file lists and error messages from the supervisor are
// bounded.
func TestDecodeMsgBounds(t *testing.T) {
	setVar(t, &maxFiles, 3)
	long := strings.Repeat("d/", MaxPath/2) + "x" // MaxPath+1 bytes
	ok := strings.Repeat("a", MaxPath)
	for _, tc := range []struct {
		line string
		good bool
	}{
		{`{"op":"files","files":[{"path":"` + ok + `","size":1}]}`, true},
		{`{"op":"files","files":[{"path":"` + long + `","size":1}]}`, false},
		{`{"op":"file","path":"` + ok + `"}`, true},
		{`{"op":"file","path":"` + long + `"}`, false},
		{`{"op":"read","path":"` + long + `","max":1}`, false},
		{`{"op":"files","files":[{"path":"a","size":1},{"path":"b","size":1},{"path":"c","size":1}]}`, true},
		{`{"op":"files","files":[{"path":"a","size":1},{"path":"b","size":1},{"path":"c","size":1},{"path":"d","size":1}]}`, false},
		{`{"op":"files","files":null}`, true},
		{`{"op":"files","files":{}}`, false},
		{`{"op":"error","error":"` + strings.Repeat("e", maxError) + `"}`, true},
		{`{"op":"error","error":"` + strings.Repeat("e", maxError+1) + `"}`, false},
		{`{"op":"file","path":"a","error":"` + strings.Repeat("e", maxError+1) + `"}`, false},
	} {
		_, err := decodeMsg([]byte(tc.line), opSet(map[bool]string{true: "host", false: "sup"}[strings.Contains(tc.line, `"read"`)]))
		if (err == nil) != tc.good {
			t.Errorf("decodeMsg(%.80q…): %v; want good=%v", tc.line, err, tc.good)
		}
		if err != nil && !errors.Is(err, ErrProtocol) {
			t.Errorf("decodeMsg(%.80q…): %v does not wrap ErrProtocol", tc.line, err)
		}
	}
}
