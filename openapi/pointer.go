package openapi

import "strings"

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointerUnescaper turns a JSON pointer's token back into the key it
// escapes.
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// pointer joins segments into a JSON pointer.
func pointer(segs ...string) string {
	var sb strings.Builder
	for _, s := range segs {
		sb.WriteByte('/')
		sb.WriteString(pointerEscaper.Replace(s))
	}
	return sb.String()
}

// child extends the JSON pointer p by segs.
func child(p string, segs ...string) string { return p + pointer(segs...) }
