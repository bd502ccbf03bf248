package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/toolset/openapi"
)

// githubSpec is the path of GitHub's REST description, installed by
// .ci/run (npm @octokit/openapi 23.0.2; see toolset/openapi's tests).
func githubSpec(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CODEMODE_OCTOKIT_DIR")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		dir = filepath.Join(c, "codemode-test", "octokit-openapi@23.0.2")
	}
	p := filepath.Join(dir, "node_modules/@octokit/openapi/generated/api.github.com.json")
	if _, err := os.Stat(p); err != nil {
		hostcap.Missing(t, hostcap.NPM, fmt.Sprintf("GitHub's REST description is not at %s; install it with\n\tnpm install --prefix %s @octokit/openapi@23.0.2\n"+
			"or run toolset/openapi's tests, which install it", p, dir))
	}
	return p
}

// The model's code finds the operation with search (reading the hits'
// summaries), reads its signature with describe, and calls it with the
// values the user gave, passing only the parameters describe shows as
// required.
const githubDiscoveryCode = `import json, re
from tools import search, describe
user = {"owner": "octo-org", "repo": "hello-world", "issue_number": 42, "body": "Thanks, fixed in #43."}
hits = search("create an issue comment", limit=5)
# As a model would: read the summaries and take the one that says it.
hit = next(h for h in hits if h["summary"].lower().startswith("create an issue comment"))
print("found:", hit["name"])
doc = describe(hit["name"])
params = re.search(r"def \w+\(\*, (.*?)\) ->", doc, re.S).group(1)
required = [p.split(":")[0].strip() for p in params.split(", ") if " = " not in p]
ns = {}
exec(hit["import"], ns)
fn = ns[hit["name"].rsplit(".", 1)[-1]]
res = fn(**{k: user[k] for k in required})
print("required:", required)
print("created:", res["id"])
`

// TestGitHubSearchDescribeCall: with GitHub's 1,223 operations behind the
// default budget, the model's code finds, reads and calls the one it needs
// using only what the block, search and describe told it; the call reaches
// a loopback server that stands in for api.github.com.
func TestGitHubSearchDescribeCall(t *testing.T) {
	requireJail(t)
	spec := githubSpec(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+strings.TrimSpace(string(body)))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id": 1001, "body": "Thanks, fixed in #43."}`)
	}))
	t.Cleanup(srv.Close)
	gh, err := openapi.New(t.Context(), openapi.Config{File: spec, Name: "github", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := &oneBlockModel{code: githubDiscoveryCode}
	out := runBlock(t, m, gh)
	stdout, _ := out["stdout"].(string)
	if !strings.Contains(stdout, "found: github.issues_create_comment") || !strings.Contains(stdout, "created: 1001") {
		t.Errorf("stdout %q, stderr %q: want the issue comment found, described and created", stdout, out["stderr"])
	}
	mu.Lock()
	defer mu.Unlock()
	want := `POST /repos/octo-org/hello-world/issues/42/comments {"body":"Thanks, fixed in #43."}`
	if len(got) != 1 || got[0] != want {
		t.Errorf("the server got %q, want [%q]", got, want)
	}
	// The block the model saw: its tier and size.
	if len(m.reqs) > 0 && m.reqs[0].Config != nil && m.reqs[0].Config.SystemInstruction != nil {
		var text strings.Builder
		for _, p := range m.reqs[0].Config.SystemInstruction.Parts {
			text.WriteString(p.Text)
		}
		block := text.String()
		if i := strings.Index(block, "<code-mode>"); i >= 0 {
			block = block[i:]
		}
		// The tier shows in what the block keeps: signatures (def lines),
		// their Args sections, or names only.
		t.Logf("the block: %d characters for 1,223 tools: %d signatures, %d Args sections",
			len(block), strings.Count(block, "\ndef ")+strings.Count(block, "\n    def "), strings.Count(block, "Args:"))
	}
}
