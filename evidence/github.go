package evidence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/toolset/openapi"
)

// GitHub's REST description: the npm package @octokit/openapi at the
// version the repository's tests pin.
const (
	octokitPackage = "@octokit/openapi@23.0.2"
	octokitFile    = "node_modules/@octokit/openapi/generated/api.github.com.json"
)

// gitHubSpecPath is where the GitHub shape looks for GitHub's REST
// description when Options.GitHubSpec is empty: under
// $CODEMODE_OCTOKIT_DIR, else under the user's cache directory, where the
// repository's tests install it.
func gitHubSpecPath() string {
	dir := os.Getenv("CODEMODE_OCTOKIT_DIR")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		dir = filepath.Join(c, "codemode-test", "octokit-openapi@23.0.2")
	}
	return filepath.Join(dir, octokitFile)
}

// SkipError says why a shape could not run on this host.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }

// The issue comment the GitHub shape posts, and the id the loopback
// server gives it.
const (
	ghOwner     = "octo-org"
	ghRepo      = "hello-world"
	ghIssue     = 42
	ghBody      = "Thanks, fixed in #43."
	ghCommentID = 1001
	ghTool      = "issues_create_comment"
)

func github(ctx context.Context, opts Options) (*fixture, error) {
	path := opts.GitHubSpec
	if path == "" {
		path = gitHubSpecPath()
	}
	if _, err := os.Stat(path); err != nil {
		return nil, &SkipError{Reason: fmt.Sprintf("GitHub's REST description is not at %s; install it with\n\tnpm install --prefix %s %s\nor point CODEMODE_OCTOKIT_DIR at such an install",
			path, strings.TrimSuffix(path, "/"+octokitFile), octokitPackage)}
	}
	calls := new(atomic.Int64)
	want := fmt.Sprintf("POST /repos/%s/%s/issues/%d/comments", ghOwner, ghRepo, ghIssue)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		w.Header().Set("Content-Type", "application/json")
		if r.Method+" "+r.URL.Path != want || !strings.Contains(string(body), ghBody) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message": "Not Found"}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id": %d, "body": %q, "user": {"login": "octocat"}}`, ghCommentID, ghBody)
	}))
	gh, err := openapi.New(ctx, openapi.Config{File: path, Name: "github", BaseURL: srv.URL})
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("GitHub's REST description at %s: %w", path, err)
	}
	list, err := gh.Tools(nil)
	if err != nil {
		srv.Close()
		return nil, err
	}
	if !containsTool(list, ghTool) {
		srv.Close()
		return nil, fmt.Errorf("GitHub's toolset has no tool %s", ghTool)
	}
	args := map[string]any{"owner": ghOwner, "repo": ghRepo, "issue_number": ghIssue, "body": ghBody}
	importLine := regexp.MustCompile(`(?m)^from (tools\.[\w.]+) import (\w+)$`)
	return &fixture{
		prompt:   fmt.Sprintf("Comment %q on issue %d of %s/%s and answer with the new comment's id only.", ghBody, ghIssue, ghOwner, ghRepo),
		toolsets: []tool.Toolset{gh}, answer: fmt.Sprint(ghCommentID), calls: calls, close: srv.Close,
		direct0: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return Turn{Calls: []*genai.FunctionCall{call(ghTool, args)}}, nil
				},
				func(obs Observation) (Turn, error) {
					r, err := response[struct {
						ID int `json:"id"`
					}](obs, ghTool)
					return answer(fmt.Sprint(r.ID)), err
				})
		},
		code: func() Policy {
			var name string
			return steps(
				// Search, and read the hits' summaries.
				func(Observation) (Turn, error) {
					return code(`from tools import search
for h in search("create an issue comment", limit=5):
    print(h["name"], "-", h["summary"])
`), nil
				},
				// Read the signature of the hit that says it.
				func(obs Observation) (Turn, error) {
					out, err := stdout(obs)
					if err != nil {
						return Turn{}, err
					}
					for _, line := range strings.Split(out, "\n") {
						n, summary, ok := strings.Cut(line, " - ")
						if ok && strings.EqualFold(strings.TrimSpace(summary), "Create an issue comment") {
							name = n
						}
					}
					if name == "" {
						return Turn{}, fmt.Errorf("no hit says it creates an issue comment: %q", out)
					}
					return code(fmt.Sprintf("from tools import describe\nprint(describe(%q))\n", name)), nil
				},
				// Call it as describe shows it.
				func(obs Observation) (Turn, error) {
					out, err := stdout(obs)
					if err != nil {
						return Turn{}, err
					}
					m := importLine.FindStringSubmatch(out)
					if m == nil || m[2] != ghTool {
						return Turn{}, fmt.Errorf("describe(%q) does not show %s: %q", name, ghTool, out)
					}
					for _, p := range []string{"owner: str", "repo: str", "issue_number: int", "body: str"} {
						if !strings.Contains(out, p) {
							return Turn{}, fmt.Errorf("describe(%q) does not show the parameter %q: %q", name, p, out)
						}
					}
					return code(fmt.Sprintf("from %s import %s\nprint(%s(owner=%q, repo=%q, issue_number=%d, body=%q)[\"id\"])\n",
						m[1], m[2], m[2], ghOwner, ghRepo, ghIssue, ghBody)), nil
				},
				printed)
		},
	}, nil
}

func containsTool(list []tool.Tool, name string) bool {
	for _, t := range list {
		if t.Name() == name {
			return true
		}
	}
	return false
}

// errSkip reports whether err says a shape cannot run here.
func errSkip(err error) (*SkipError, bool) {
	var s *SkipError
	return s, errors.As(err, &s)
}
