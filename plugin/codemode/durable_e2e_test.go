package codemode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/glebarez/sqlite"
	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/api/option"
	"google.golang.org/genai"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact/gcsartifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session/database"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
)

// The agent of these tests runs as a process of its own: the test binary
// started again with durableAgentEnv set, which TestMain turns into the
// agent (durableAgent). Its sessions are ADK's database session service
// over SQLite, its artifacts ADK's GCS artifact service against a
// GCS-compatible server on loopback, and its tools count what they do on
// a server of the test's, so that what ran, across processes, is known.

const (
	durableAgentEnv  = "CODEMODE_TEST_DURABLE_AGENT"
	durableDBEnv     = "CODEMODE_TEST_DURABLE_DB"
	durableBucketEnv = "CODEMODE_TEST_DURABLE_BUCKET"
	durableCountEnv  = "CODEMODE_TEST_DURABLE_COUNTER"
)

func TestMain(m *testing.M) {
	if os.Getenv(durableAgentEnv) != "" {
		if err := durableAgent(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "durable agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// durableCode is the turn of the agent's model: a block that calls a
// tool and leaves a variable and a file, and one that reads them, calls a
// tool, pays (which waits for a person's approval) and goes on.
var durableCode = []string{
	"from tools import record\nrecord(label='one')\ny = 7\nopen('note.txt', 'w').write('kept')\nprint('block one done')",
	"from tools import record, send_money\nrecord(label='two')\nr = send_money(amount=5)\nprint('after', y, open('note.txt').read(), r)\nrecord(label='three')",
}

// durableReq is one line the test writes to the agent: a user message, or
// the person's answer to a confirmation request.
type durableReq struct {
	Session string `json:"session"`
	Text    string `json:"text,omitempty"`
	Answer  string `json:"answer,omitempty"` // the confirmation request's id
	Confirm bool   `json:"confirm,omitempty"`
}

// durableEvent is one line the agent writes per event: the function calls
// and the execute_code results it holds; a line with Done ends a request.
type durableEvent struct {
	Calls   []*genai.FunctionCall `json:"calls,omitempty"`
	Results []map[string]any      `json:"results,omitempty"`
	Done    bool                  `json:"done,omitempty"`
	Err     string                `json:"error,omitempty"`
}

// durableAgent runs the agent: one request per line of in, its events on
// out.
func durableAgent(in io.Reader, out io.Writer) error {
	ctx := context.Background()
	// GORM logs to stdout, where the events go.
	sessions, err := database.NewSessionService(sqlite.Open(os.Getenv(durableDBEnv)), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return err
	}
	if err := database.AutoMigrate(sessions); err != nil {
		return err
	}
	// STORAGE_EMULATOR_HOST points the client at the test's server.
	artifacts, err := gcsartifact.NewService(ctx, os.Getenv(durableBucketEnv), option.WithoutAuthentication())
	if err != nil {
		return err
	}
	count := func(label string) error {
		resp, err := http.Post(os.Getenv(durableCountEnv)+"?label="+label, "text/plain", nil)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	label := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"label": {Type: "string"}}, Required: []string{"label"}}
	record, err := functiontool.New(functiontool.Config{Name: "record", Description: "Record a label.", InputSchema: label},
		func(_ agent.Context, a map[string]any) (map[string]any, error) {
			return map[string]any{"recorded": a["label"]}, count(fmt.Sprint(a["label"]))
		})
	if err != nil {
		return err
	}
	amount := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"amount": {Type: "integer"}}, Required: []string{"amount"}}
	send, err := functiontool.New(functiontool.Config{Name: "send_money", Description: "Send money.", InputSchema: amount},
		func(ctx agent.Context, a map[string]any) (map[string]any, error) {
			if ctx.ToolConfirmation() == nil {
				return nil, ctx.RequestConfirmation(fmt.Sprintf("Send %v euros?", a["amount"]), nil)
			}
			return map[string]any{"sent": a["amount"]}, count(fmt.Sprint("send:", a["amount"]))
		})
	if err != nil {
		return err
	}
	p, err := New(Config{Tools: []tool.Tool{record, send}, Durable: true})
	if err != nil {
		return err
	}
	defer p.Close()
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: durableModel{}, Instruction: "You are a helpful assistant."})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{
		AppName: "durable", Agent: a, SessionService: sessions, ArtifactService: artifacts,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}, AutoCreateSession: true,
	})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		var req durableReq
		if err := json.Unmarshal(lines.Bytes(), &req); err != nil {
			return err
		}
		msg := genai.NewContentFromText(req.Text, genai.RoleUser)
		if req.Answer != "" {
			msg = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
				ID: req.Answer, Name: "adk_request_confirmation", Response: map[string]any{"confirmed": req.Confirm},
			}}}}
		}
		for ev, err := range r.Run(ctx, "user", req.Session, msg, agent.RunConfig{}) {
			var line durableEvent
			if err != nil {
				line.Err = err.Error()
			} else if ev.Content != nil {
				for _, part := range ev.Content.Parts {
					if part.FunctionCall != nil {
						line.Calls = append(line.Calls, part.FunctionCall)
					}
					if fr := part.FunctionResponse; fr != nil && fr.Name == ToolName {
						line.Results = append(line.Results, fr.Response)
					}
				}
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
		}
		if err := enc.Encode(durableEvent{Done: true}); err != nil {
			return err
		}
	}
	return lines.Err()
}

// durableModel runs durableCode's blocks in turn for any user text, then
// replies with a text quoting the last block's stdout.
type durableModel struct{}

func (durableModel) Name() string { return "durable-script" }

func (durableModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		run := func(code string) *genai.Content {
			return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
				Name: ToolName, Args: map[string]any{"code": code},
			}}}}
		}
		reply := genai.NewContentFromText("nothing to answer", genai.RoleModel)
		for _, part := range req.Contents[len(req.Contents)-1].Parts {
			switch {
			case part.Text != "":
				reply = run(durableCode[0])
			case part.FunctionResponse != nil && part.FunctionResponse.Name == ToolName:
				stdout, _ := part.FunctionResponse.Response["stdout"].(string)
				reply = genai.NewContentFromText("seen: "+stdout, genai.RoleModel)
				if strings.Contains(stdout, "block one done") {
					reply = run(durableCode[1])
				}
			}
		}
		yield(&model.LLMResponse{Content: reply, TurnComplete: true}, nil)
	}
}

// durableWorld is what the agent processes share: the database, the GCS
// server and its bucket, and the count of what the tools did.
type durableWorld struct {
	env []string
	mu  sync.Mutex
	did map[string]int
}

func newDurableWorld(t *testing.T) *durableWorld {
	t.Helper()
	// The server serves on a listener of the test's, so that the host it
	// answers downloads for (PublicHost) is the address the client uses.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gcs, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", NoListener: true, PublicHost: l.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	gcs.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "artifacts"})
	srv := &http.Server{Handler: gcs.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); gcs.Stop() })
	w := &durableWorld{did: map[string]int{}}
	counter := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.did[r.URL.Query().Get("label")]++
		w.mu.Unlock()
	}))
	t.Cleanup(counter.Close)
	w.env = append(os.Environ(),
		durableAgentEnv+"=1",
		durableDBEnv+"="+filepath.Join(t.TempDir(), "sessions.db"),
		durableBucketEnv+"=artifacts",
		durableCountEnv+"="+counter.URL,
		"STORAGE_EMULATOR_HOST="+l.Addr().String(),
	)
	return w
}

// counts returns what the tools did, by label.
func (w *durableWorld) counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.did {
		out[k] = v
	}
	return out
}

// durableProc is one agent process.
type durableProc struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

func (w *durableWorld) start(t *testing.T) *durableProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = w.env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &durableProc{t: t, cmd: cmd, in: in, out: json.NewDecoder(out)}
	t.Cleanup(p.kill)
	return p
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *durableProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// send writes req and reads the events of its run.
func (p *durableProc) send(req durableReq) []durableEvent {
	p.t.Helper()
	line, err := json.Marshal(req)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		p.t.Fatal(err)
	}
	var evs []durableEvent
	deadline := time.AfterFunc(2*time.Minute, p.kill)
	defer deadline.Stop()
	for {
		var ev durableEvent
		if err := p.out.Decode(&ev); err != nil {
			p.t.Fatalf("reading the agent's events: %v (so far %+v)", err, evs)
		}
		if ev.Done {
			return evs
		}
		if ev.Err != "" {
			p.t.Fatalf("the run failed: %s", ev.Err)
		}
		evs = append(evs, ev)
	}
}

// confirmationID is the id of the one confirmation request among evs.
func confirmationID(t *testing.T, evs []durableEvent) string {
	t.Helper()
	var ids []string
	for _, ev := range evs {
		for _, c := range ev.Calls {
			if c.Name == "adk_request_confirmation" {
				ids = append(ids, c.ID)
			}
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d confirmation requests, want 1: %+v", len(ids), evs)
	}
	return ids[0]
}

// lastResult is the last execute_code result among evs.
func lastResult(t *testing.T, evs []durableEvent) map[string]any {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if r := evs[i].Results; len(r) > 0 {
			return r[len(r)-1]
		}
	}
	t.Fatalf("no execute_code result: %+v", evs)
	return nil
}

// TestDurableAcrossProcesses kills the agent with SIGKILL while a block
// waits for approval, starts a new process, approves there, and the block
// finishes with the output it would have had; each tool ran once. Then the
// same with two replicas alive, the answer reaching the one that did not
// run the block.
func TestDurableAcrossProcesses(t *testing.T) {
	adksuite.Backend(t) // the agent processes run the jail
	want := "after 7 kept {'sent': 5}\n"
	for _, tc := range []struct {
		name  string
		split func(w *durableWorld, first *durableProc) *durableProc
	}{
		{"killed", func(w *durableWorld, first *durableProc) *durableProc {
			first.kill()
			return w.start(t)
		}},
		{"replicas", func(w *durableWorld, _ *durableProc) *durableProc { return w.start(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newDurableWorld(t)
			first := w.start(t)
			id := confirmationID(t, first.send(durableReq{Session: "s1", Text: "pay"}))
			if got := w.counts(); got["one"] != 1 || got["two"] != 1 || got["send:5"] != 0 {
				t.Fatalf("before the answer the tools did %v", got)
			}
			second := tc.split(w, first)
			out := lastResult(t, second.send(durableReq{Session: "s1", Answer: id, Confirm: true}))
			if out["stdout"] != want || out["stderr"] != "" {
				t.Errorf("the resumed block's result %v, want stdout %q", out, want)
			}
			if got, want := w.counts(), map[string]int{"one": 1, "two": 1, "send:5": 1, "three": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the tools did %v, want each once: %v", got, want)
			}
			// The same answer again resumes nothing and runs nothing, here
			// or, with replicas, in the one that still holds the block.
			procs := []*durableProc{second}
			if tc.name == "replicas" {
				procs = append(procs, first)
			}
			for _, p := range procs {
				again := lastResult(t, p.send(durableReq{Session: "s1", Answer: id, Confirm: true}))
				if stderr, _ := again["stderr"].(string); !strings.Contains(stderr, "nothing ran again") || w.counts()["send:5"] != 1 {
					t.Errorf("the answer given twice: %v; the tools did %v", again, w.counts())
				}
			}
		})
	}
}

// BenchmarkResume times the answer to a block that paused after 20 tool
// calls, in a process that does not hold it (resumed from the turn's
// record: a fresh sandbox, the block run again with the 20 calls answered
// from the record, then the approved call), against the floor of the same
// block run for the first time in a fresh sandbox, with no pause. It
// reports the record's size.
func BenchmarkResume(b *testing.B) {
	const calls = 20
	code := "from tools import record, send_money\nfor i in range(" + fmt.Sprint(calls) + "):\n    record(label=str(i))\nprint(send_money(amount=5))"
	plain := "from tools import record\nfor i in range(" + fmt.Sprint(calls) + "):\n    record(label=str(i))\nprint('done')"
	label := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"label": {Type: "string"}}, Required: []string{"label"}}
	amount := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"amount": {Type: "integer"}}, Required: []string{"amount"}}
	tools := []adksuite.Tool{
		{Name: "record", Description: "Record a label.", Params: label, Run: func(_ adksuite.Call, a map[string]any) (map[string]any, error) {
			return map[string]any{"recorded": a["label"], "note": strings.Repeat("x", 100)}, nil
		}},
		{Name: "send_money", Description: "Send money.", Params: amount, Run: func(c adksuite.Call, a map[string]any) (map[string]any, error) {
			if c.Confirmation() == nil {
				return nil, c.RequestConfirmation("Send?", nil)
			}
			return map[string]any{"sent": a["amount"]}, nil
		}},
	}
	setup := func(prev adksuite.Agent) adksuite.Setup {
		return adksuite.Setup{
			Tools: tools, Artifacts: prev == nil, ServicesOf: prev, Config: adksuite.Config{Backend: adksuite.Backend(b), Durable: true},
			Model: adksuite.NewScript().On("go", adksuite.Exec(code), adksuite.Say("done")).On("plain", adksuite.Exec(plain), adksuite.Say("done")),
		}
	}
	send := func(a adksuite.Agent, msg *genai.Content) []adksuite.Event {
		evs, err := a.Send(b.Context(), "s1", msg)
		if err != nil {
			b.Fatal(err)
		}
		return evs
	}
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			a := line{}.Start(b, setup(nil))
			b.StartTimer()
			if out := adksuite.Outputs(send(a, genai.NewContentFromText("plain", genai.RoleUser))); len(out) != 1 || out[0]["stdout"] != "done\n" {
				b.Fatalf("the block's result: %v", out)
			}
			b.StopTimer()
			_ = a.Close()
			b.StartTimer()
		}
	})
	b.Run("resume", func(b *testing.B) {
		var size int
		for b.Loop() {
			b.StopTimer()
			a := line{}.Start(b, setup(nil))
			var id string
			for _, ev := range send(a, genai.NewContentFromText("go", genai.RoleUser)) {
				for _, p := range ev.Content.Parts {
					if fc := p.FunctionCall; fc != nil && fc.Name == "adk_request_confirmation" {
						id = fc.ID
					}
				}
			}
			if id == "" {
				b.Fatal("the block did not pause")
			}
			size = recordSize(b, a)
			_ = a.Close()
			r := line{}.Start(b, setup(a))
			answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
				ID: id, Name: "adk_request_confirmation", Response: map[string]any{"confirmed": true},
			}}}}
			b.StartTimer()
			if out := adksuite.Outputs(send(r, answer)); len(out) != 1 || out[0]["stdout"] != "{'sent': 5}\n" {
				b.Fatalf("the resumed block's result: %v", out)
			}
			b.StopTimer()
			_ = r.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(size), "record-bytes")
	})
}

// recordSize is the size of the one turn record session s1 of a holds.
func recordSize(b *testing.B, a adksuite.Agent) int {
	names, err := a.ArtifactNames(b.Context(), "s1")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "codemode-resume-") {
			p, err := a.Artifact(b.Context(), "s1", n, 0)
			if err != nil {
				b.Fatal(err)
			}
			return len(p.InlineData.Data)
		}
	}
	b.Fatal("no turn record was saved")
	return 0
}
