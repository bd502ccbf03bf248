package codemode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"mime"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/tool"

	"github.com/adk-codemode/codemode/transport"
)

// execTool is the execute_code tool.
type execTool struct {
	e    *engine
	decl *genai.FunctionDeclaration
}

var (
	_ tool.Tool    = (*execTool)(nil)
	_ runnableTool = (*execTool)(nil)
)

func (t *execTool) Name() string                            { return ToolName }
func (t *execTool) Description() string                     { return t.decl.Description }
func (t *execTool) IsLongRunning() bool                     { return false }
func (t *execTool) Declaration() *genai.FunctionDeclaration { return t.decl }

// Messages the model gets when the connection to the sandbox is lost.
const (
	msgNotRun  = "The sandbox could not be reached, so the code did not run. Nothing it would have done has happened; you may run it again."
	msgUnknown = "The connection to the sandbox was lost while the code was running. It may or may not have run, in part or in whole, and the turn's variables are gone. Check its effects before running anything again."
	msgRan     = "The code ran, but the connection to the sandbox was lost before its output arrived, and the turn's variables are gone. Do not run it again; check its effects instead."
)

// Run runs the code in the invocation's sandbox, opening it on the first
// call of the turn. Calls of one invocation run one at a time.
func (t *execTool) Run(ctx agent.ToolContext, args any) (map[string]any, error) {
	m, _ := args.(map[string]any)
	code, ok := m["code"].(string)
	if !ok {
		return nil, fmt.Errorf("execute_code: the code argument must be a string, got %T", m["code"])
	}
	e := t.e
	if limit := e.cfg.MaxCodeChars; limit > 0 && len(code) > limit {
		if n := utf8.RuneCountInString(code); n > limit {
			return result("", fmt.Sprintf("Code exceeds maximum allowed length (%s > %s chars).", thousands(n), thousands(limit)), nil), nil
		}
	}
	tn, err := e.acquire(ctx.InvocationID())
	if err != nil {
		return nil, err
	}
	exec := &execCall{parent: ctx, id: ctx.FunctionCallID()}
	defer func() {
		exec.mu.Lock()
		exec.closed = true
		exec.mu.Unlock()
		tn.mu.Lock()
		if tn.running == exec {
			tn.running = nil
		}
		tn.inUse--
		tn.lastUsed = time.Now()
		var s transport.Session
		if tn.released && tn.inUse == 0 {
			s, tn.sess = tn.sess, nil
		}
		tn.mu.Unlock()
		if s != nil {
			_ = s.Close()
		}
	}()
	// The surface is resolved on the turn the call runs on: a turn looked
	// up again could be another one, created after this one was released.
	if _, err := e.surfaceOf(ctx, tn); err != nil {
		return nil, err
	}
	tn.exec.Lock()
	defer tn.exec.Unlock()
	tn.mu.Lock()
	tn.running = exec
	tn.mu.Unlock()
	// Runs first, on every way out (tool calls may have saved artifacts
	// before a lost connection): no save is accepted after the delta is
	// taken, so the hook sees what the event records.
	defer func() {
		exec.mu.Lock()
		exec.closed = true
		delta := maps.Clone(exec.delta)
		exec.mu.Unlock()
		if len(delta) > 0 && e.cfg.OnArtifactsSaved != nil {
			e.cfg.OnArtifactsSaved(ctx, delta)
		}
	}()

	block := transport.Block{Code: code, Timeout: e.cfg.Timeout}
	var res *transport.Result
	var sess transport.Session
	lostState := false // a sandbox that earlier calls used was lost
	for attempt := 1; ; attempt++ {
		var err error
		var fresh bool
		sess, fresh, err = e.session(ctx, tn)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			if attempt > 1 {
				return result("", msgNotRun+"\n"+err.Error(), nil), nil
			}
			return nil, fmt.Errorf("execute_code: start the sandbox: %w", err)
		}
		res, err = sess.Exec(ctx, block)
		if err == nil {
			break
		}
		var ce *transport.ConnectionError
		var ve *transport.VersionError
		switch {
		case errors.As(err, &ve):
			tn.discard(sess)
			return nil, err
		case errors.As(err, &ce):
			tn.discard(sess)
			if e.isClosed() {
				return nil, ErrClosed
			}
			switch ce.Stage {
			case transport.NotRun:
				if attempt < 2 {
					lostState = lostState || !fresh
					continue
				}
				return result("", msgNotRun, nil), nil
			case transport.Ran:
				return result("", msgRan, nil), nil
			default:
				return result("", msgUnknown, nil), nil
			}
		case errors.Is(err, transport.ErrClosed) && e.isClosed():
			return nil, ErrClosed
		default:
			tn.discard(sess)
			return nil, fmt.Errorf("execute_code: %w", err)
		}
	}
	if lostState {
		// The model must know that what earlier blocks left is gone.
		r := *res
		r.Stderr = appendLine(r.Stderr, msgFresh)
		res = &r
	}
	return e.output(ctx, exec, sess, res), nil
}

// msgFresh is added to stderr when the code ran on a fresh sandbox because
// the turn's sandbox was lost before the code was sent.
const msgFresh = "[The turn's sandbox was lost before this code was sent, so it ran in a fresh sandbox: variables, imports and files from earlier blocks of this turn are gone.]"

// appendLine appends line to s on a line of its own.
func appendLine(s, line string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + line
}

// session returns the turn's sandbox, opening it if needed; fresh says it
// was opened now.
func (e *engine) session(ctx agent.ToolContext, tn *turn) (_ transport.Session, fresh bool, _ error) {
	tn.mu.Lock()
	s, surf := tn.sess, tn.surf
	tn.mu.Unlock()
	if s != nil {
		return s, false, nil
	}
	if e.isClosed() {
		return nil, false, ErrClosed
	}
	if surf == nil {
		return nil, false, errors.New("codemode: the turn has no tool surface")
	}
	s, err := e.cfg.Backend.Open(ctx, transport.SessionConfig{Files: surf.files, Tools: handler{e: e, t: tn}})
	if err != nil {
		return nil, false, err
	}
	recordEnvironment(e.cfg.Backend, s.Environment())
	tn.mu.Lock()
	tn.sess = s
	tn.mu.Unlock()
	// Close may have run meanwhile and missed this session.
	if e.isClosed() {
		tn.discard(s)
		return nil, false, ErrClosed
	}
	return s, true, nil
}

// discard closes s if it is still the turn's sandbox.
func (t *turn) discard(s transport.Session) {
	t.mu.Lock()
	if t.sess == s {
		t.sess = nil
	}
	t.mu.Unlock()
	_ = s.Close()
}

func (e *engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// maxOutputFiles bounds the workspace files saved as artifacts after one
// block; the rest are named in stderr.
const maxOutputFiles = 1000

// output shapes a block's result for the model. With an artifact service,
// the files the block created or changed are saved as artifacts and listed
// in output_files, and a stream cut for the model is saved in full.
func (e *engine) output(ctx agent.ToolContext, exec *execCall, sess transport.Session, res *transport.Result) map[string]any {
	stderr := res.Stderr
	if res.ExitCode != 0 {
		if s := strings.TrimRight(stderr, " \t\r\n"); s != "" {
			stderr = s + "\n"
		} else {
			stderr = ""
		}
		stderr += fmt.Sprintf("Process exited with code %d.", res.ExitCode)
	}
	files, notes := e.saveFiles(ctx, exec, sess, res.Files)
	// The notes name paths the sandbox chose: they are bounded and
	// neutralised with the rest of stderr.
	if len(notes) > 0 {
		if stderr != "" && !strings.HasSuffix(stderr, "\n") {
			stderr += "\n"
		}
		stderr += strings.Join(notes, "\n")
	}
	stdout := e.stream(ctx, exec, "stdout", res.Stdout, res.StdoutDropped)
	stderr = e.stream(ctx, exec, "stderr", stderr, res.StderrDropped)
	return result(stdout, stderr, files)
}

// outputFilesTimeout bounds reading a block's changed files from the
// sandbox, all of them together; a variable for tests.
var outputFilesTimeout = 2 * time.Minute

// maxNotePath bounds a path quoted in a note.
const maxNotePath = 256

// notePath quotes a path the sandbox sent, on one line and bounded.
func notePath(p string) string {
	if utf8.RuneCountInString(p) > maxNotePath {
		p = string([]rune(p)[:maxNotePath]) + "..."
	}
	return strconv.Quote(p)
}

// saveFiles saves the workspace files a block created or changed as
// artifacts, by [WorkspaceArtifactName], and returns their names and a note
// for each file that could not be saved. Without an artifact service it
// saves nothing. A path listed twice is saved once, and reading the files
// from the sandbox takes at most outputFilesTimeout.
func (e *engine) saveFiles(ctx agent.ToolContext, exec *execCall, sess transport.Session, files []transport.FileInfo) (names, notes []string) {
	if len(files) == 0 || sess == nil || !exec.hasArtifacts() {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, outputFilesTimeout)
	defer cancel()
	seen := map[string]bool{}
	saved := 0
	for i, f := range files {
		if seen[f.Path] {
			continue
		}
		seen[f.Path] = true
		if saved == maxOutputFiles {
			notes = append(notes, fmt.Sprintf("[%d more changed files were not saved as artifacts: at most %d are saved per call.]", len(files)-i, maxOutputFiles))
			break
		}
		if rctx.Err() != nil {
			notes = append(notes, fmt.Sprintf("[%s and %d more changed files were not saved as artifacts: reading them from the sandbox took longer than %s.]",
				notePath(f.Path), len(files)-i-1, outputFilesTimeout))
			break
		}
		saved++
		data, err := sess.ReadFile(rctx, f.Path)
		if err != nil {
			if rctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("reading the changed files from the sandbox took longer than %s", outputFilesTimeout)
			}
			notes = append(notes, fmt.Sprintf("[%s was not saved as an artifact: %v]", notePath(f.Path), err))
			continue
		}
		name := WorkspaceArtifactName(f.Path)
		if _, err := exec.save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: fileMIMEType(f.Path), Data: data}}); err != nil {
			notes = append(notes, fmt.Sprintf("[%s was not saved as an artifact: %v]", notePath(f.Path), err))
			continue
		}
		names = append(names, name)
	}
	return names, notes
}

// fileMIMEType guesses a workspace file's MIME type from its extension,
// else application/octet-stream. The tool-result type is never given.
func fileMIMEType(p string) string {
	t := mime.TypeByExtension(path.Ext(p))
	if t == "" || baseMIME(t) == ToolResultMIMEType {
		return "application/octet-stream"
	}
	return t
}

// stream returns one output stream as the model sees it: bounded and
// neutralised, with a note when something was left out. The full text of a
// cut stream is saved as the artifact codemode-<stream>-<call>.txt, and the
// note tells how to load it.
func (e *engine) stream(ctx agent.ToolContext, exec *execCall, kind, text string, dropped int64) string {
	view, cut := boundOutput(text, e.cfg.MaxOutputChars)
	if !cut && dropped == 0 {
		return view
	}
	var note strings.Builder
	note.WriteString("\n[")
	if cut {
		fmt.Fprintf(&note, "Output too long: %s characters, more than the limit of %s; only the start and the end are shown.",
			thousands(utf8.RuneCountInString(text)), thousands(e.cfg.MaxOutputChars))
	}
	if dropped > 0 {
		if cut {
			note.WriteByte(' ')
		}
		fmt.Fprintf(&note, "The sandbox dropped %s bytes from the middle of %s before it reached the host.", thousands(int(dropped)), kind)
	}
	if cut && exec.hasArtifacts() {
		name := streamArtifactName(kind, exec.id)
		if _, err := exec.save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte(text)}}); err == nil {
			fmt.Fprintf(&note, " The full %s was saved as the artifact %s", kind, name)
			if !e.cfg.DisableArtifactTools {
				fmt.Fprintf(&note, "; load it with load_artifact(filename='%s')", name)
			}
			note.WriteByte('.')
		}
	}
	note.WriteByte(']')
	return view + note.String()
}

func result(stdout, stderr string, files []string) map[string]any {
	if files == nil {
		files = []string{}
	}
	return map[string]any{"stdout": stdout, "stderr": stderr, "output_files": files}
}
