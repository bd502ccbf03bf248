package engine

import "testing"

func TestExceptionType(t *testing.T) {
	for _, tc := range []struct{ stderr, want string }{
		{"Traceback (most recent call last):\n  File \"<code-mode>\", line 1, in <module>\nKeyError: 'events'\n", "KeyError"},
		{"Traceback (most recent call last):\n  File \"x\", line 2\ncodemode_runtime.ToolError: ValidationError: bad\n", "codemode_runtime.ToolError"},
		{"Traceback (most recent call last):\n  File \"x\", line 2\nKeyboardInterrupt\n", "KeyboardInterrupt"},
		{"warning: something\n", ""},
	} {
		if got := exceptionType(tc.stderr); got != tc.want {
			t.Errorf("exceptionType(%q) = %q, want %q", tc.stderr, got, tc.want)
		}
	}
}
