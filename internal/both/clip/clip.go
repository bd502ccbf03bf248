package clip

import "strings"

// String returns s if it has at most n bytes; otherwise its first n bytes,
// less any character they would split, followed by "…". Invalid UTF-8 in
// the kept part is dropped, so the result is always valid UTF-8.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
