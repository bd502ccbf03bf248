package clip

import (
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short stays", "abc", 3, "abc"},
		{"long is cut", "abcdef", 3, "abc…"},
		{"cut inside a character drops it", "aé", 2, "a…"},
		{"zero keeps only the mark", "abc", 0, "…"},
		{"negative is zero", "abc", -1, "…"},
		{"invalid bytes are dropped", "a\xffbcd", 3, "ab…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.s, tt.n)
			if got != tt.want {
				t.Errorf("String(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("String(%q, %d) = %q is not valid UTF-8", tt.s, tt.n, got)
			}
		})
	}
}
