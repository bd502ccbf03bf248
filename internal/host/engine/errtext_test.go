package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// QuotaError is an exported error type, as a tool's own would be.
type QuotaError struct{}

func (*QuotaError) Error() string { return "over quota" }

func TestErrorType(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("x"), "ToolError"},
		{&QuotaError{}, "QuotaError"},
		{fmt.Errorf("calling: %w", &QuotaError{}), "QuotaError"},
		{errors.Join(errors.New("a")), "ToolError"},
		{context.DeadlineExceeded, "TimeoutError"},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), "TimeoutError"},
	}
	for _, tt := range tests {
		if got := ErrorType(tt.err); got != tt.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
