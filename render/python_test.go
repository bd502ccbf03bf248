package render

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// compileScript reads JSON lines {"name", "source"} and answers each with a
// JSON line: "" when the source compiles, else the SyntaxError text.
const compileScript = `
import ast, json, sys
for line in sys.stdin:
    req = json.loads(line)
    try:
        compile(ast.parse(req["source"], req["name"]), req["name"], "exec")
        out = ""
    except (SyntaxError, ValueError) as e:
        out = "%s: %s" % (type(e).__name__, e)
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
`

// pythonPath returns /usr/bin/python3, else python3 from PATH; without
// either it ends tb (see hostcap.Missing).
func pythonPath(tb testing.TB) string {
	tb.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		hostcap.Missing(tb, hostcap.Python, err)
	}
	return p
}

// pyChecker is a persistent Python process that compiles sources.
type pyChecker struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  *json.Encoder
	out *bufio.Scanner
}

func newPyChecker(tb testing.TB) *pyChecker {
	tb.Helper()
	py := pythonPath(tb)
	cmd := exec.Command(py, "-c", compileScript)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	c := &pyChecker{cmd: cmd, in: json.NewEncoder(stdin), out: sc}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	return c
}

// check returns "" when source is valid Python, else the error.
func (c *pyChecker) check(tb testing.TB, name, source string) string {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.in.Encode(map[string]string{"name": name, "source": source}); err != nil {
		tb.Fatalf("python checker: %v", err)
	}
	if !c.out.Scan() {
		tb.Fatalf("python checker died: %v", c.out.Err())
	}
	var msg string
	if err := json.Unmarshal(c.out.Bytes(), &msg); err != nil {
		tb.Fatalf("python checker: %v", err)
	}
	return msg
}
