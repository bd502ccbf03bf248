package render

import (
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pythonKeywords are the hard keywords of Python 3.12; they cannot be
// identifiers.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true, "def": true,
	"del": true, "elif": true, "else": true, "except": true, "finally": true, "for": true,
	"from": true, "global": true, "if": true, "import": true, "in": true, "is": true,
	"lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
}

// pythonBuiltins are the lower-case names of Python's builtins module. A
// tool imported under one of them would hide the builtin from the code that
// imports it, so tool names take the keywords' "_" suffix (see toolName).
var pythonBuiltins = map[string]bool{
	"abs": true, "aiter": true, "all": true, "anext": true, "any": true, "ascii": true,
	"bin": true, "bool": true, "breakpoint": true, "bytearray": true, "bytes": true,
	"callable": true, "chr": true, "classmethod": true, "compile": true, "complex": true,
	"copyright": true, "credits": true, "delattr": true, "dict": true, "dir": true,
	"divmod": true, "enumerate": true, "eval": true, "exec": true, "exit": true,
	"filter": true, "float": true, "format": true, "frozenset": true, "getattr": true,
	"globals": true, "hasattr": true, "hash": true, "help": true, "hex": true, "id": true,
	"input": true, "int": true, "isinstance": true, "issubclass": true, "iter": true,
	"len": true, "license": true, "list": true, "locals": true, "map": true, "max": true,
	"memoryview": true, "min": true, "next": true, "object": true, "oct": true, "open": true,
	"ord": true, "pow": true, "print": true, "property": true, "quit": true, "range": true,
	"repr": true, "reversed": true, "round": true, "set": true, "setattr": true,
	"slice": true, "sorted": true, "staticmethod": true, "str": true, "sum": true,
	"super": true, "tuple": true, "type": true, "vars": true, "zip": true,
}

// toolName is the Python name of a tool: identifier's rule, and a "_"
// suffix on a builtin's name as on a keyword, so that importing the tool
// leaves the builtin usable. Parameters keep builtin names: a keyword
// argument hides nothing from the caller.
func toolName(s string) string {
	id := identifier(s, "tool")
	if pythonBuiltins[id] {
		id += "_"
	}
	return id
}

// identifier turns s into a Python identifier: characters outside
// [A-Za-z0-9_] become "_", underscores are trimmed from both ends, an empty
// result becomes fallback, a leading digit gains a "_" prefix and a keyword a
// "_" suffix.
func identifier(s, fallback string) string {
	if isIdentifier(s) {
		if pythonKeywords[s] {
			return s + "_"
		}
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r < utf8.RuneSelf && (r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	id := strings.Trim(sb.String(), "_")
	if id == "" {
		id = fallback
	}
	if id[0] >= '0' && id[0] <= '9' {
		id = "_" + id
	}
	if pythonKeywords[id] {
		id += "_"
	}
	return id
}

// isIdentifier reports whether identifier keeps s apart from the keyword
// suffix: [A-Za-z0-9_] only, not starting with a digit and neither starting
// nor ending with "_".
func isIdentifier(s string) bool {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Limits on rendered Python values.
const (
	maxReprDepth = 16
	maxReprItems = 32
)

// repr renders a decoded JSON value as a Python expression. exact is false
// when the value was shortened to stay bounded; the text is still valid
// Python but no longer equal to the value.
func repr(v any) (text string, exact bool) {
	var sb strings.Builder
	exact = true
	writeRepr(&sb, v, 0, &exact)
	return sb.String(), exact
}

func writeRepr(sb *strings.Builder, v any, depth int, exact *bool) {
	if depth > maxReprDepth {
		sb.WriteString("...")
		*exact = false
		return
	}
	switch t := v.(type) {
	case nil:
		sb.WriteString("None")
	case bool:
		if t {
			sb.WriteString("True")
		} else {
			sb.WriteString("False")
		}
	case json.Number:
		sb.WriteString(numberRepr(t, true))
	case float64:
		sb.WriteString(numberRepr(json.Number(strconv.FormatFloat(t, 'g', -1, 64)), true))
	case string:
		sb.WriteString(strRepr(t))
	case []any:
		sb.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				sb.WriteString(", ")
			}
			if i == maxReprItems {
				sb.WriteString("...")
				*exact = false
				break
			}
			writeRepr(sb, e, depth+1, exact)
		}
		sb.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(", ")
			}
			if i == maxReprItems {
				sb.WriteString("'...': ...")
				*exact = false
				break
			}
			sb.WriteString(strRepr(k))
			sb.WriteString(": ")
			writeRepr(sb, t[k], depth+1, exact)
		}
		sb.WriteByte('}')
	default:
		sb.WriteString(strRepr(fmt.Sprint(t)))
		*exact = false
	}
}

// str renders a value the way Python's str() would for the constraint
// suffix: booleans as true/false, integral floats as integers, strings raw.
func str(v any) string {
	switch t := v.(type) {
	case bool:
		if t {
			return "true"
		}
		return "false"
	case string:
		return t
	case json.Number:
		return numberRepr(t, false)
	}
	s, _ := repr(v)
	return s
}

// maxPyIntDigits is the longest decimal integer literal Python accepts by
// default (sys.get_int_max_str_digits()); longer ones are a SyntaxError.
const maxPyIntDigits = 4300

// numberRepr renders a JSON number as Python would print it: integers
// exactly, floats in repr's shortest form. As an expression, infinities
// become float('inf'); in text (expr false) integral floats lose ".0".
func numberRepr(n json.Number, expr bool) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
		if b, ok := new(big.Int).SetString(s, 10); ok {
			text := b.String()
			if expr && len(strings.TrimPrefix(text, "-")) > maxPyIntDigits {
				// Python refuses decimal literals this long; a hexadecimal
				// one is exact and has no limit.
				if b.Sign() < 0 {
					return "-0x" + new(big.Int).Neg(b).Text(16)
				}
				return "0x" + b.Text(16)
			}
			return text
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if math.IsNaN(f) {
		// Only a json.Number handed over in a Go value can say NaN.
		if expr {
			return "float('nan')"
		}
		return "nan"
	}
	if err != nil && !math.IsInf(f, 0) {
		return "0"
	}
	if math.IsInf(f, 0) {
		if !expr {
			if f > 0 {
				return "inf"
			}
			return "-inf"
		}
		if f > 0 {
			return "float('inf')"
		}
		return "float('-inf')"
	}
	if !expr && f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return floatRepr(f)
}

// floatRepr mirrors Python's repr(float): shortest round-trip digits, fixed
// notation for 1e-4 <= |f| < 1e16 and exponent notation otherwise.
func floatRepr(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	decpt := exp + 1
	if decpt > -4 && decpt <= 16 {
		neg := strings.HasPrefix(mant, "-")
		digits := strings.ReplaceAll(strings.TrimPrefix(mant, "-"), ".", "")
		var out string
		switch {
		case decpt <= 0:
			out = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			out = digits[:decpt] + "." + digits[decpt:]
		}
		if neg {
			out = "-" + out
		}
		return out
	}
	return e
}

// strRepr renders s as a Python string literal, choosing quotes and escapes
// as Python's repr does.
func strRepr(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	if plainASCII(s, quote) {
		return string(quote) + s + string(quote)
	}
	var sb strings.Builder
	sb.Grow(len(s) + 2)
	sb.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, r)
		case !unicode.IsPrint(r):
			switch {
			case r <= 0xff:
				fmt.Fprintf(&sb, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&sb, `\u%04x`, r)
			default:
				fmt.Fprintf(&sb, `\U%08x`, r)
			}
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte(quote)
	return sb.String()
}

// plainASCII reports whether s is printable ASCII without quote or
// backslash, which strRepr keeps as it is.
func plainASCII(s string, quote byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == quote || c == '\\' {
			return false
		}
	}
	return true
}

// plainDocText reports whether writeDocText writes s as it is: no quotes,
// backslashes or control characters, and valid UTF-8 (invalid bytes become
// U+FFFD) without U+0085, U+2028 or U+2029 (which are escaped).
func plainDocText(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			ascii = false
		case c == '"' || c == '\\' || c == 0x7f:
			return false
		case c < 0x20 && c != '\n' && c != '\t':
			return false
		}
	}
	if ascii {
		return true
	}
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0x85) &&
		!strings.ContainsRune(s, 0x2028) && !strings.ContainsRune(s, 0x2029)
}

// writeDocText writes free text to sb so that it is safe inside a
// triple-quoted docstring. raw says whether the docstring will carry the r
// prefix (because some text holds a backslash); control characters then
// appear as literal \xNN text.
func writeDocText(sb *strings.Builder, s string, raw bool) {
	if plainDocText(s) {
		sb.WriteString(s)
		return
	}
	quotes := 0
	for _, r := range s {
		if r == '"' {
			quotes++
			if quotes == 3 {
				sb.WriteString(`\"`)
				quotes = 0
				continue
			}
			sb.WriteRune(r)
			continue
		}
		quotes = 0
		switch {
		case r == '\\':
			if raw {
				sb.WriteByte('\\')
			} else {
				sb.WriteString(`\\`)
			}
		case r == '\n' || r == '\t':
			sb.WriteRune(r)
		case r < 0x20 || r == 0x7f || r == 0x85:
			fmt.Fprintf(sb, `\x%02x`, r)
		case r == 0x2028 || r == 0x2029:
			// \x takes two hex digits: "\x2028" would read as " 28".
			fmt.Fprintf(sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
}

// lines splits text into lines, treating \r\n and \r as line breaks and
// trimming trailing space on each.
func lines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	out := strings.Split(s, "\n")
	for i, l := range out {
		out[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	return out
}

// wrap lays out prose for a docstring at width columns, keeping its
// structure. Paragraphs are filled; a list item (-, *, + or a number and a
// dot or parenthesis) starts its own line, and its continuation is filled
// under its text; block quotes, headings, table rows and code (fenced, or
// indented by four spaces after a blank line) keep their lines as written.
// Words longer than width are kept whole, so that URLs survive.
func wrap(s string, width int) []string {
	if simpleLine(s, width) {
		return []string{s}
	}
	var out []string
	var para []string // words' lines of the paragraph or item being filled
	first, cont := "", ""
	flush := func() {
		if len(para) > 0 {
			out = fill(out, para, first, cont, width)
			para = para[:0]
		}
	}
	blank := func() {
		if len(out) > 0 && out[len(out)-1] != "" {
			out = append(out, "")
		}
	}
	fence := ""
	for _, l := range lines(s) {
		trimmed := strings.TrimLeft(l, " \t")
		if fence != "" {
			out = append(out, l)
			if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
				fence = ""
			}
			continue
		}
		switch {
		case trimmed == "":
			flush()
			blank()
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			flush()
			out = append(out, l)
			fence = trimmed[:3]
		case trimmed[0] == '>' || trimmed[0] == '#' || trimmed[0] == '|' ||
			len(para) == 0 && len(l)-len(trimmed) >= 4 && (len(out) == 0 || out[len(out)-1] == ""):
			flush()
			out = append(out, l)
		default:
			if m := listMarker(trimmed); m > 0 {
				flush()
				lead := l[:len(l)-len(trimmed)]
				first = lead + trimmed[:m]
				cont = spaces(len(lead) + m)
				para = append(para, trimmed[m:])
				continue
			}
			if len(para) == 0 {
				first, cont = "", ""
			}
			para = append(para, trimmed)
		}
	}
	flush()
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// fieldsOf yields the words of s as strings.Fields would split them, without
// allocating.
func fieldsOf(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := -1
		for i, r := range s {
			if unicode.IsSpace(r) {
				if start >= 0 && !yield(s[start:i]) {
					return
				}
				start = -1
			} else if start < 0 {
				start = i
			}
		}
		if start >= 0 {
			yield(s[start:])
		}
	}
}

// simpleLine reports whether wrap leaves s as its only line: one line
// within width, without leading, trailing or repeated white space.
func simpleLine(s string, width int) bool {
	if s == "" || len(s) > 4*width || s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "  ") ||
		strings.ContainsAny(s, "\n\r\t\v\f") || strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			// Other spaces (U+00A0, U+2028, ...) take the general path.
			return false
		}
	}
	return len(s) <= width
}

// listMarker returns the length of the list marker that starts s, with the
// space after it, or 0.
func listMarker(s string) int {
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && s[1] == ' ' {
		return 2
	}
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && s[i+1] == ' ' {
		return i + 2
	}
	return 0
}

// fill appends the words of para filled to width columns, the first line
// after first and the others after cont.
func fill(out, para []string, first, cont string, width int) []string {
	var line strings.Builder
	line.WriteString(first)
	prefix := utf8.RuneCountInString(first)
	runes, words := prefix, 0
	for _, l := range para {
		for w := range fieldsOf(l) {
			n := utf8.RuneCountInString(w)
			switch {
			case words == 0:
			case runes+1+n <= width:
				line.WriteByte(' ')
				runes++
			default:
				out = append(out, line.String())
				line.Reset()
				line.WriteString(cont)
				runes, words = utf8.RuneCountInString(cont), 0
			}
			line.WriteString(w)
			runes += n
			words++
		}
	}
	if words > 0 {
		out = append(out, line.String())
	}
	return out
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + " [...]"
}
