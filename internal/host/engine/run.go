package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/adk-codemode/codemode/transport"
)

// ErrClosed is returned by execute_code once Code Mode is closed.
var ErrClosed = errors.New("codemode: closed")

// Messages the model gets when the connection to the sandbox is lost.
const (
	msgNotRun  = "The sandbox could not be reached, so the code did not run. Nothing it would have done has happened; you may run it again."
	msgUnknown = "The connection to the sandbox was lost while the code was running. It may or may not have run, in part or in whole, and the turn's variables are gone. Check its effects before running anything again."
	msgRan     = "The code ran, but the connection to the sandbox was lost before its output arrived, and the turn's variables are gone. Do not run it again; check its effects instead."
	// msgFresh is added to stderr when the code ran on a fresh sandbox
	// because the turn's sandbox was lost before the code was sent.
	msgFresh = "[The turn's sandbox was lost before this code was sent, so it ran in a fresh sandbox: variables, imports and files from earlier blocks of this turn are gone.]"
)

// Sandbox is the sandbox a turn's blocks run in, opened on first use.
type Sandbox interface {
	// Session returns the turn's session, opening it if needed; fresh
	// says it was opened now.
	Session(ctx context.Context) (s transport.Session, fresh bool, err error)
	// Discard drops s, if it is still the turn's, and closes it.
	Discard(s transport.Session)
	// Closed says whether Code Mode is closed.
	Closed() bool
}

// RunBlock runs blk in sb and returns its result and the session it ran
// in. A block that could not be sent runs once more, in a fresh sandbox,
// with a note that earlier state is gone. clock, if set, runs while the
// block is sent and run, never while a sandbox starts. A lost sandbox is
// a *LostError that tells the model what may have happened.
func RunBlock(ctx context.Context, sb Sandbox, b Budgets, blk transport.Block, clock *RunClock) (*transport.Result, transport.Session, error) {
	lostState := false // a sandbox that earlier calls used was lost
	for attempt := 1; ; attempt++ {
		sess, fresh, err := sb.Session(ctx)
		switch {
		case errors.Is(err, ErrClosed):
			return nil, nil, err
		case err != nil && ctx.Err() != nil:
			// Interrupted while the sandbox was starting: nothing ran,
			// and the model must know that, not a start that failed.
			return &transport.Result{ExitCode: 1, Stderr: fmt.Sprintf(
				"codemode: The code was interrupted before it started (%s): the sandbox was still starting, so none of the code ran.",
				context.Cause(ctx))}, nil, nil
		case err != nil && attempt > 1:
			return nil, nil, &LostError{Msg: msgNotRun + "\n" + err.Error(), Stage: "not_run"}
		case err != nil:
			return nil, nil, fmt.Errorf("execute_code: start the sandbox: %w", err)
		}
		MeterEgress(b, sess)
		clock.start()
		res, err := sess.Exec(ctx, blk)
		if err == nil {
			if lostState {
				// The model must know that what earlier blocks left is gone.
				r := *res
				r.Stderr = AppendLine(r.Stderr, msgFresh)
				res = &r
			}
			return res, sess, nil
		}
		retry, err := execFailed(sb, sess, err, attempt)
		if !retry {
			return nil, nil, err
		}
		clock.stop() // while the fresh sandbox starts
		lostState = lostState || !fresh
	}
}

// execFailed classifies a failed Exec: the sandbox is dropped, and a block
// that was never sent may run again (retry) on the first attempt.
func execFailed(sb Sandbox, sess transport.Session, err error, attempt int) (retry bool, _ error) {
	var ce *transport.ConnectionError
	var ve *transport.VersionError
	switch {
	case errors.As(err, &ve):
		sb.Discard(sess)
		return false, err
	case errors.As(err, &ce):
		sb.Discard(sess)
		if sb.Closed() {
			return false, ErrClosed
		}
		switch ce.Stage {
		case transport.NotRun:
			if attempt < 2 {
				return true, nil
			}
			return false, &LostError{Msg: msgNotRun, Stage: "not_run"}
		case transport.Ran:
			return false, &LostError{Msg: msgRan, Stage: "ran"}
		default:
			return false, &LostError{Msg: msgUnknown, Stage: "unknown"}
		}
	case errors.Is(err, transport.ErrClosed) && sb.Closed():
		return false, ErrClosed
	default:
		sb.Discard(sess)
		return false, fmt.Errorf("execute_code: %w", err)
	}
}

// AppendLine appends line to s on a line of its own.
func AppendLine(s, line string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + line
}
