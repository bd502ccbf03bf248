package openapi

import (
	"strconv"
	"strings"
	"unicode"
)

// maxNameLen bounds a tool name, as function-calling models do.
const maxNameLen = 64

// Rename reports a tool whose name is not the one its operation asked for:
// two operations whose names sanitise alike, or a name cut to 64
// characters. The first operation in document order keeps the name; later
// ones get a numeric suffix.
type Rename struct {
	Pointer     string // the operation, e.g. /paths/~1pets/get
	OperationID string
	Wanted      string // the sanitised name before the collision or cut
	Name        string // the tool's name
	Reason      string
}

// sanitise turns an operationId, or a method and path, into a snake_case
// tool name of ASCII letters, digits and underscores, starting with a
// letter.
func sanitise(s string) string {
	rs := []rune(s)
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	under := func() {
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "_") {
			sb.WriteByte('_')
		}
	}
	for i, r := range rs {
		switch {
		case r < unicode.MaxASCII && unicode.IsUpper(r):
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || nextLower {
				under()
			}
			sb.WriteRune(unicode.ToLower(r))
		case r < unicode.MaxASCII && (unicode.IsLower(r) || unicode.IsDigit(r)):
			sb.WriteRune(r)
		default:
			under()
		}
	}
	name := strings.Trim(sb.String(), "_")
	if name == "" {
		name = "operation"
	}
	if name[0] >= '0' && name[0] <= '9' {
		name = "op_" + name
	}
	return name
}

// cut shortens name to n bytes without a trailing underscore.
func cut(name string, n int) string {
	if len(name) <= n {
		return name
	}
	return strings.TrimRight(name[:n], "_")
}

// namer hands out unique tool names in the order asked.
type namer struct {
	used    map[string]bool
	renamed []Rename
}

func (n *namer) name(ptr, opID, wanted string) string {
	if n.used == nil {
		n.used = map[string]bool{}
	}
	name := cut(wanted, maxNameLen)
	reason := ""
	if name != wanted {
		reason = "cut to 64 characters"
	}
	if n.used[name] {
		base := name
		for i := 2; ; i++ {
			suffix := "_" + strconv.Itoa(i)
			name = cut(base, maxNameLen-len(suffix)) + suffix
			if !n.used[name] {
				break
			}
		}
		reason = "the name is taken by an earlier operation"
	}
	n.used[name] = true
	if reason != "" {
		n.renamed = append(n.renamed, Rename{Pointer: ptr, OperationID: opID, Wanted: wanted, Name: name, Reason: reason})
	}
	return name
}
