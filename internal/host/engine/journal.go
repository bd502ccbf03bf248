package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/adk-codemode/codemode/transport"
)

// A journal is the record of a turn's tool calls from code, kept so that
// the turn can be run again after its process is gone, with every call it
// made answered from the record instead of run twice: each call's tool,
// a digest of its arguments, and its result or error, in the order the
// calls were made. Replaying the turn's blocks in a fresh sandbox then
// brings the code to where it was; a call the record does not hold (code
// that does something else on replay) stops the block.
//
// The record is bounded: a result larger than MaxJournalValueBytes is kept
// by reference to the artifact it was saved as, if it was, and a turn whose
// record would outgrow MaxJournalBytes or MaxJournalEntries is marked
// overflowed, after which it cannot be resumed.

// Bounds of a journal.
const (
	// MaxJournalEntries is the most calls one turn's journal records.
	MaxJournalEntries = 10_000
	// MaxJournalBytes bounds a journal's encoded size, the code of the
	// turn's blocks included.
	MaxJournalBytes = 8 << 20
	// MaxJournalValueBytes is the largest result a journal holds in full.
	MaxJournalValueBytes = 1 << 20
	// MaxJournalBlocks is the most blocks a turn's record holds.
	MaxJournalBlocks = 1_000
)

// journalVersion is the version of the encoding this package writes and
// reads.
const journalVersion = 1

// JournalEntry is one tool call of a turn's journal.
type JournalEntry struct {
	// Block is the index, from 0, of the turn's block that made the call.
	Block int `json:"block"`
	// Tool is the tool's name, as the surface knows it.
	Tool string `json:"tool"`
	// Args is the digest of the call's arguments (see ArgsDigest).
	Args string `json:"args"`
	// Value is the call's result, as JSON, when it succeeded and fits.
	Value json.RawMessage `json:"value,omitempty"`
	// ValueRef names the artifact that holds a result too large for the
	// journal.
	ValueRef string `json:"value_ref,omitempty"`
	// Err is the call's error, as the code got it.
	Err *JournalError `json:"error,omitempty"`
}

// JournalError is a failed call as the code got it.
type JournalError struct {
	Type       string          `json:"type"`
	Message    string          `json:"message"`
	StatusCode int             `json:"status_code,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
}

// Journal is a turn's record of tool calls: written as the calls end, and
// read back to answer them on replay. It is safe for concurrent use: calls
// from threads of one block end in any order.
type Journal struct {
	mu         sync.Mutex
	entries    []JournalEntry
	size       int // the encoded size of the entries, roughly
	overflowed bool
	// used marks the entries a replay has answered.
	used []bool
}

// journalFile is the encoding of a turn's record: the code of its blocks,
// the journal of their calls, and the call a block paused at.
type journalFile struct {
	Version    int            `json:"version"`
	Overflowed bool           `json:"overflowed,omitempty"`
	Blocks     []string       `json:"blocks"`
	Pending    *PendingCall   `json:"pending,omitempty"`
	Entries    []JournalEntry `json:"entries"`
}

// PendingCall is the call a paused block waits at: the answer to it is
// what resumes the turn.
type PendingCall struct {
	Block  int    `json:"block"`
	Tool   string `json:"tool"`
	Args   string `json:"args"`    // see ArgsDigest
	CallID string `json:"call_id"` // the call's function call id, which it keeps when it runs
	// Expires is when the wait for the answer ends (Config.ApprovalTimeout),
	// in Unix milliseconds: a later answer resumes nothing.
	Expires int64 `json:"expires"`
}

// ArgsDigest is the digest a journal keeps of a call's arguments: the
// SHA-256 of their JSON encoding, whose object keys encoding/json sorts.
func ArgsDigest(args map[string]any) (string, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("the arguments cannot be encoded as JSON: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Record appends the call of tool with args, made by the turn's block
// number block, with its result res; ref names the artifact res was saved
// as, if it was, which the journal refers to when res is too large to
// hold. It reports whether the call was recorded: false once the journal
// has overflowed, after which the turn cannot be resumed.
func (j *Journal) Record(block int, tool string, args map[string]any, res transport.ToolResult, ref string) bool {
	e := JournalEntry{Block: block, Tool: tool}
	digest, err := ArgsDigest(args)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.overflowed {
		return false
	}
	if err != nil {
		j.overflowed = true
		return false
	}
	e.Args = digest
	if res.Err != nil {
		e.Err = &JournalError{Type: res.Err.Type, Message: res.Err.Message, StatusCode: res.Err.StatusCode}
		if res.Err.Body != nil {
			if b, err := json.Marshal(res.Err.Body); err == nil && len(b) <= MaxJournalValueBytes {
				e.Err.Body = b
			}
		}
	} else {
		b, err := json.Marshal(res.Value)
		switch {
		case err == nil && len(b) <= MaxJournalValueBytes:
			e.Value = b
		case ref != "":
			e.ValueRef = ref
		default:
			// Neither held nor saved: a replay could not give the code
			// this result back.
			j.overflowed = true
			return false
		}
	}
	size := len(e.Tool) + len(e.Args) + len(e.Value) + len(e.ValueRef) + 64
	if e.Err != nil {
		size += len(e.Err.Type) + len(e.Err.Message) + len(e.Err.Body)
	}
	if len(j.entries) >= MaxJournalEntries || j.size+size > MaxJournalBytes {
		j.overflowed = true
		return false
	}
	j.entries = append(j.entries, e)
	j.size += size
	return true
}

// Overflowed reports whether the journal stopped recording: the turn it
// records cannot be resumed.
func (j *Journal) Overflowed() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.overflowed
}

// Len is the number of calls recorded.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.entries)
}

// Entries returns a copy of the recorded calls, in order.
func (j *Journal) Entries() []JournalEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]JournalEntry(nil), j.entries...)
}

// Marshal encodes the record of a turn: the code of its blocks, this
// journal of their calls, and the call pending, if any.
func (j *Journal) Marshal(blocks []string, pending *PendingCall) ([]byte, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	entries := j.entries
	if entries == nil {
		entries = []JournalEntry{}
	}
	if blocks == nil {
		blocks = []string{}
	}
	return json.Marshal(journalFile{Version: journalVersion, Overflowed: j.overflowed, Blocks: blocks, Pending: pending, Entries: entries})
}

// TurnRecord is a turn's record read back: what resumes it.
type TurnRecord struct {
	Blocks  []string
	Pending *PendingCall
	Journal *Journal
}

// ReadJournal decodes a turn's record that Marshal wrote. The data comes
// from storage another process wrote, so it is bounded and checked: its
// size, its version, the number of entries, each entry's fields, and the
// blocks the entries and the pending call name.
func ReadJournal(data []byte) (*TurnRecord, error) {
	if len(data) > MaxJournalBytes {
		return nil, fmt.Errorf("journal: %d bytes, more than a journal holds (%d)", len(data), MaxJournalBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f journalFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if dec.More() {
		return nil, errors.New("journal: data after the journal")
	}
	if f.Version != journalVersion {
		return nil, fmt.Errorf("journal: version %d, want %d: it was written by another release of Code Mode", f.Version, journalVersion)
	}
	if len(f.Blocks) > MaxJournalBlocks {
		return nil, fmt.Errorf("journal: %d blocks, more than %d", len(f.Blocks), MaxJournalBlocks)
	}
	if len(f.Entries) > MaxJournalEntries {
		return nil, fmt.Errorf("journal: %d entries, more than %d", len(f.Entries), MaxJournalEntries)
	}
	j := &Journal{entries: f.Entries, overflowed: f.Overflowed}
	for i, e := range f.Entries {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("journal: entry %d: %w", i, err)
		}
		if e.Block >= len(f.Blocks) {
			return nil, fmt.Errorf("journal: entry %d: block %d of %d", i, e.Block, len(f.Blocks))
		}
		j.size += len(e.Tool) + len(e.Args) + len(e.Value) + len(e.ValueRef) + 64
	}
	if p := f.Pending; p != nil {
		if p.Block < 0 || p.Block >= len(f.Blocks) || p.Tool == "" || p.CallID == "" || len(p.Args) != sha256.Size*2 {
			return nil, errors.New("journal: the pending call is not one of the blocks' calls")
		}
	}
	return &TurnRecord{Blocks: f.Blocks, Pending: f.Pending, Journal: j}, nil
}

// check reports what is wrong with an entry read back.
func (e JournalEntry) check() error {
	switch {
	case e.Block < 0:
		return fmt.Errorf("block %d", e.Block)
	case e.Tool == "":
		return errors.New("no tool")
	case len(e.Args) != sha256.Size*2:
		return errors.New("the arguments' digest is not a SHA-256")
	case len(e.Value) > MaxJournalValueBytes:
		return fmt.Errorf("a value of %d bytes, more than %d", len(e.Value), MaxJournalValueBytes)
	}
	if _, err := hex.DecodeString(e.Args); err != nil {
		return errors.New("the arguments' digest is not hexadecimal")
	}
	outcomes := 0
	for _, set := range []bool{e.Value != nil, e.ValueRef != "", e.Err != nil} {
		if set {
			outcomes++
		}
	}
	if outcomes != 1 {
		return errors.New("not exactly one of a value, a value's artifact and an error")
	}
	if e.Value != nil && !json.Valid(e.Value) {
		return errors.New("the value is not JSON")
	}
	if e.Err != nil && e.Err.Type == "" {
		return errors.New("an error with no type")
	}
	return nil
}

// count is the number of calls recorded for block number block.
func (j *Journal) count(block int) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.countLocked(block)
}

func (j *Journal) countLocked(block int) int {
	n := 0
	for _, e := range j.entries {
		if e.Block == block {
			n++
		}
	}
	return n
}

// DivergenceError is a replayed block's tool call that the journal does
// not hold: the code did something else than before the restart, so the
// block stops there and nothing more of it runs.
type DivergenceError struct {
	Block int
	Tool  string
	// Recorded is the number of calls the journal holds for the block.
	Recorded int
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("the block was run again to resume it in a process that did not hold it, and its code called %s with arguments "+
		"that the record of the first run does not hold (%d calls recorded for block %d): code that is resumed must make the "+
		"same tool calls with the same arguments, so it may not depend on the time, on randomness or on the network "+
		"between tool calls; nothing more of the block was run", e.Tool, e.Recorded, e.Block)
}

// Answer returns the recorded outcome of a replayed call of tool with
// args by the turn's block number block: the first unanswered entry of
// that block for the same tool and arguments, so calls from threads match
// in any order. done is false when the block has no such entry left and
// no entry of its left at all: the replay has caught up, and the call runs
// for real. An error is a divergence (a *DivergenceError): entries of the
// block are left but none matches.
func (j *Journal) Answer(block int, tool string, args map[string]any) (res transport.ToolResult, ref string, done bool, err error) {
	digest, err := ArgsDigest(args)
	if err != nil {
		return res, "", false, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.used == nil {
		j.used = make([]bool, len(j.entries))
	}
	left := 0
	for i, e := range j.entries {
		if e.Block != block || j.used[i] {
			continue
		}
		left++
		if e.Tool != tool || e.Args != digest {
			continue
		}
		j.used[i] = true
		if e.Err != nil {
			te := &transport.ToolError{Type: e.Err.Type, Message: e.Err.Message, StatusCode: e.Err.StatusCode}
			if e.Err.Body != nil {
				var body any
				dec := json.NewDecoder(bytes.NewReader(e.Err.Body))
				dec.UseNumber()
				if dec.Decode(&body) == nil {
					te.Body = body
				}
			}
			return transport.ToolResult{Err: te}, "", true, nil
		}
		if e.ValueRef != "" {
			return res, e.ValueRef, true, nil
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(e.Value))
		dec.UseNumber() // integers beyond float64's precision come back whole
		if err := dec.Decode(&v); err != nil {
			return res, "", false, fmt.Errorf("journal: the value of call %d: %w", i, err)
		}
		return transport.ToolResult{Value: v}, "", true, nil
	}
	if left == 0 {
		return res, "", false, nil
	}
	return res, "", false, &DivergenceError{Block: block, Tool: tool, Recorded: j.countLocked(block)}
}
