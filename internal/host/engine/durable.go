package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/genai"
)

// TurnLog is what a durable turn keeps to be resumed in another process:
// the code of its blocks, in order, and the journal of their tool calls.
//
// The flow, which each adapter follows on its framework: a block that
// pauses saves the record as an artifact before the person is asked
// (SaveRecord). The process that holds the block resumes it as always,
// marking the record spent (SpendHeld). One that does not reads the
// record (LoadRecord), marks it spent first (SpendRecord), so that an
// answer given twice runs the call once, and has the turn's blocks run
// again in a fresh sandbox (Turn.Resume), answered from the record (see
// [Replay]) up to the call that waited, which runs with the answer.
type TurnLog struct {
	mu      sync.Mutex
	blocks  []string
	Journal Journal
}

// AddBlock records the code of the turn's next block and returns its
// number (see [Launch.Seq]).
func (l *TurnLog) AddBlock(code string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocks = append(l.blocks, code)
	return len(l.blocks) - 1
}

// Marshal encodes the turn's record with the call pending, if any: what
// is saved where another process can read it (see [ReadJournal]).
func (l *TurnLog) Marshal(pending *PendingCall) ([]byte, error) {
	l.mu.Lock()
	blocks := append([]string(nil), l.blocks...)
	l.mu.Unlock()
	return l.Journal.Marshal(blocks, pending)
}

// Replay is a turn run again from its record to resume it in another
// process: the tool calls of its blocks are answered from the journal,
// and the pending call runs with the person's answer, once; what the
// block does after it runs for real.
type Replay struct {
	Journal *Journal
	Pending PendingCall
	Answer  Confirmation

	mu       sync.Mutex
	taken    bool  // the pending call has run
	diverged error // why the replay stopped, if it did
}

// Live reports whether the calls of the turn's block number seq run for
// real: those of a block after the pending one, and of the pending one
// after its pending call.
func (r *Replay) Live(seq int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return seq > r.Pending.Block || seq == r.Pending.Block && r.taken
}

// take reports whether a call of block seq, of tool with args of digest
// args, is the pending one, the first time it comes.
func (r *Replay) take(seq int, tool, args string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.taken || seq != r.Pending.Block || tool != r.Pending.Tool || args != r.Pending.Args {
		return false
	}
	r.taken = true
	return true
}

// diverge records why the replay stopped, the first time.
func (r *Replay) diverge(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.diverged == nil {
		r.diverged = err
	}
}

// Diverged is why the replay stopped: the code made a call its record
// does not hold (a *DivergenceError). Nil while it follows the record.
func (r *Replay) Diverged() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.diverged
}

// SaveRecord saves the record of a durable turn whose block f paused at
// req under the execute_code call callID, where another process can
// resume it (see [ResumeArtifactName]) until expires.
func SaveRecord(ctx context.Context, store ArtifactStore, log *TurnLog, callID string, f *Block, req *ApprovalRequest, expires time.Time) error {
	if log.Journal.Overflowed() {
		return fmt.Errorf("the turn's record outgrew its bounds (%d calls, %d bytes)", MaxJournalEntries, MaxJournalBytes)
	}
	digest, err := ArgsDigest(req.Args)
	if err != nil {
		return err
	}
	data, err := log.Marshal(&PendingCall{Block: f.Seq(), Tool: req.Tool, Args: digest, CallID: req.CallID, Expires: expires.UnixMilli()})
	if err != nil {
		return err
	}
	if len(data) > MaxJournalBytes || len(log.blocks) > MaxJournalBlocks {
		return fmt.Errorf("the turn's record (%d bytes, %d blocks) is larger than a record may be (%d bytes, %d blocks)", len(data), len(log.blocks), MaxJournalBytes, MaxJournalBlocks)
	}
	return saveRecordData(ctx, store, callID, data)
}

// LoadRecord reads the record saved under the execute_code call callID:
// nil when there is none, or when the wait for the answer has expired; a
// record with no pending call when it was resumed already (see
// [SpendRecord]).
func LoadRecord(ctx context.Context, store ArtifactStore, callID string) (*TurnRecord, error) {
	part, err := store.Load(ctx, ResumeArtifactName(callID), 0)
	if errors.Is(err, fs.ErrNotExist) || err == nil && (part == nil || part.InlineData == nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := ReadJournal(part.InlineData.Data)
	if err != nil || rec.Pending != nil && time.Now().UnixMilli() > rec.Pending.Expires {
		return nil, err
	}
	return rec, nil
}

// SpendRecord saves the record rec again without its pending call, so
// that the answer to it cannot resume the turn a second time.
func SpendRecord(ctx context.Context, store ArtifactStore, rec *TurnRecord, callID string) error {
	data, err := rec.Journal.Marshal(rec.Blocks, nil)
	if err != nil {
		return err
	}
	return saveRecordData(ctx, store, callID, data)
}

// Spend saves the turn's record under the execute_code call callID
// without a pending call: the turn, resumed by this process, cannot be
// resumed again elsewhere.
func (l *TurnLog) Spend(ctx context.Context, store ArtifactStore, callID string) error {
	data, err := l.Marshal(nil)
	if err != nil {
		return err
	}
	return saveRecordData(ctx, store, callID, data)
}

func saveRecordData(ctx context.Context, store ArtifactStore, callID string, data []byte) error {
	_, err := store.Save(ctx, ResumeArtifactName(callID), &genai.Part{InlineData: &genai.Blob{MIMEType: "application/json", Data: data}})
	return err
}

// Resume runs the blocks of rec again on the turn, in order, each started
// by launch, up to the one that paused, which last settles; the calls
// they make are answered from rec (see [Replay]), and the one that waited
// runs with answer. It returns last's outcome, or the model's result for a
// replay that could not go on.
func (t *Turn[S, X]) Resume(ctx context.Context, rec *TurnRecord, answer Confirmation, launch func(code string) *Block, last func(*Block) (map[string]any, error)) (map[string]any, error) {
	replay := &Replay{Journal: rec.Journal, Pending: *rec.Pending, Answer: answer}
	t.SetReplay(replay)
	var out map[string]any
	var err error
	for i, code := range rec.Blocks[:rec.Pending.Block+1] {
		f := launch(code)
		if i == rec.Pending.Block {
			out, err = last(f)
		} else if req := f.Follow(ctx); req != nil {
			f.Cancel(errors.New("a block run again to resume its turn paused for approval"))
			t.Shutdown()
			return Result("", fmt.Sprintf("The turn could not be resumed: block %d, run again, asked for approval at its call of %s, which it did not before; nothing more was run.", i+1, req.Tool), nil), nil
		} else {
			// What a block before the one that paused printed was the
			// model's already: it runs again for its variables and files.
			t.SetBlock(nil)
			_, _, err = f.Outcome()
		}
		if d := replay.Diverged(); d != nil {
			return Result("", d.Error(), nil), nil
		}
		if lost := (*LostError)(nil); errors.As(err, &lost) {
			return Result("", lost.Msg, nil), nil
		}
		if err != nil || i == rec.Pending.Block {
			return out, err
		}
	}
	return nil, errors.New("codemode: a turn's record without the block that paused")
}

// MsgAnsweredAgain is the result of an answer to a block that was resumed
// already, by this process or another.
const MsgAnsweredAgain = "This answer was given already: the code it answers was resumed then, by this process or another, and nothing ran again."

// CannotResume is the result of an answer to the code paused under callID
// that could not resume it, for reason.
func CannotResume(callID, reason string) map[string]any {
	return Result("", fmt.Sprintf("The code paused under %s could not be resumed: %s. The call that awaited approval was not run.", callID, reason), nil)
}

// SpendHeld marks the record of the block paused under callID spent, for
// the process that holds the block and resumes it; it reports false when
// the record was spent already, by another process that resumed the block.
// A failure to mark it leaves the block resumable elsewhere, and is logged.
func (l *TurnLog) SpendHeld(ctx context.Context, store ArtifactStore, callID string) bool {
	if rec, err := LoadRecord(ctx, store, callID); err == nil && rec != nil && rec.Pending == nil {
		return false
	}
	if err := l.Spend(ctx, store, callID); err != nil {
		slog.Warn("codemode: the resumed block's record was not marked spent", "call", callID, "error", err)
	}
	return true
}
