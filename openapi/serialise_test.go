package openapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// The values of the specification's style examples; object keys come out
// sorted.
var (
	prim = any("blue")
	arr  = any([]any{"blue", "black", "brown"})
	obj  = any(map[string]any{"R": json.Number("100"), "G": json.Number("200"), "B": json.Number("150")})
)

func TestStyles(t *testing.T) {
	cases := []struct {
		in, style string
		explode   bool
		prim, arr string
		obj       string
	}{
		{"path", "simple", false, "blue", "blue,black,brown", "B,150,G,200,R,100"},
		{"path", "simple", true, "blue", "blue,black,brown", "B=150,G=200,R=100"},
		{"path", "label", false, ".blue", ".blue,black,brown", ".B,150,G,200,R,100"},
		{"path", "label", true, ".blue", ".blue.black.brown", ".B=150.G=200.R=100"},
		{"path", "matrix", false, ";color=blue", ";color=blue,black,brown", ";color=B,150,G,200,R,100"},
		{"path", "matrix", true, ";color=blue", ";color=blue;color=black;color=brown", ";B=150;G=200;R=100"},
		{"query", "form", false, "color=blue", "color=blue,black,brown", "color=B,150,G,200,R,100"},
		{"query", "form", true, "color=blue", "color=blue&color=black&color=brown", "B=150&G=200&R=100"},
		{"query", "spaceDelimited", false, "color=blue", "color=blue%20black%20brown", "color=B,150,G,200,R,100"},
		{"query", "pipeDelimited", false, "color=blue", "color=blue|black|brown", "color=B,150,G,200,R,100"},
		{"query", "deepObject", true, "color=blue", "color=blue,black,brown", "color%5BB%5D=150&color%5BG%5D=200&color%5BR%5D=100"},
		{"header", "simple", false, "blue", "blue,black,brown", "B,150,G,200,R,100"},
		{"header", "simple", true, "blue", "blue,black,brown", "B=150,G=200,R=100"},
		{"cookie", "form", false, "color=blue", "color=blue,black,brown", "color=B,150,G,200,R,100"},
		{"cookie", "form", true, "color=blue", "color=blue; color=black; color=brown", "B=150; G=200; R=100"},
	}
	for _, c := range cases {
		p := param{name: "color", in: c.in, style: c.style, explode: c.explode}
		for _, v := range []struct {
			val  any
			want string
		}{{prim, c.prim}, {arr, c.arr}, {obj, c.obj}} {
			if got := serialise(p, v.val); got != v.want {
				t.Errorf("%s %s explode=%v %v: got %q, want %q", c.in, c.style, c.explode, v.val, got, v.want)
			}
		}
	}
}

// serialise renders one parameter as it appears on the wire.
func serialise(p param, v any) string {
	switch p.in {
	case "path":
		return pathValue(p, v)
	case "query":
		return strings.Join(queryPairs(p, v), "&")
	case "header":
		return headerValue(p, v)
	}
	return strings.Join(cookiePairs(p, v), "; ")
}

func TestEscaping(t *testing.T) {
	cases := []struct {
		p    param
		v    any
		want string
	}{
		{param{name: "f", in: "path", style: "simple"}, "a b/c?d", "a%20b%2Fc%3Fd"},
		{param{name: "f", in: "path", style: "simple"}, "é", "%C3%A9"},
		{param{name: "q", in: "query", style: "form", explode: true}, "a&b=c", "q=a%26b%3Dc"},
		{param{name: "q", in: "query", style: "form", explode: true, allowReserved: true}, "a/b?c", "q=a/b?c"},
		{param{name: "q", in: "query", style: "form", explode: true, asJSON: true}, map[string]any{"k": "v"}, "q=%7B%22k%22%3A%22v%22%7D"},
		{param{name: "n", in: "query", style: "form", explode: true}, 3.0, "n=3"},
		{param{name: "n", in: "query", style: "form", explode: true}, 0.5, "n=0.5"},
		{param{name: "b", in: "query", style: "form", explode: true}, true, "b=true"},
		{param{name: "c", in: "cookie", style: "form", explode: true}, "a;b c", "c=a%3Bb%20c"},
	}
	for _, c := range cases {
		if got := serialise(c.p, c.v); got != c.want {
			t.Errorf("%s %v: got %q, want %q", c.p.in, c.v, got, c.want)
		}
	}
}
